"""``info["privileged"]``: with ``privileged=True`` the base puts a fresh copy in every info; it survives
vector envs and JSONL. Without it (the default) no info holds it."""

from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import DictInfoToList

from agentenvs.core.env import Outcome, TextEnv
from agentenvs.core.privileged import (
    PRIVILEGED_KEY,
    copy_json,
    is_json_stable,
    privileged_keys,
    privileged_of,
    strip_privileged,
)
from agentenvs.core.trajectory import Trajectory, Turn, read_jsonl, to_json_value, write_jsonl


class SecretEnv(TextEnv):
    """Guess the task's secret word; the env knows it (privileged), the agent does not."""

    def __init__(self, privileged: bool = True) -> None:
        super().__init__(max_turns=3, privileged=privileged)

    @property
    def task_ids(self):
        return ["t0", "t1"]

    def _task_text(self, task_id):
        return "Guess the word."

    def _begin(self, task_id):
        self._secret = {"answer": f"word{task_id[1:]}", "hints": ["short", "lower case"], "weight": 0.5}
        return "Guess.", {}

    def _privileged(self):
        return self._secret

    def _act(self, action):
        won = action == self._secret["answer"]
        return Outcome("Right." if won else "Wrong.", reward=float(won), terminated=won, won=won)


class PlainEnv(SecretEnv):
    def _privileged(self):
        return TextEnv._privileged(self)


def test_every_info_carries_its_own_copy():
    env = SecretEnv()
    _, info = env.reset(options={"task_id": "t1"})
    assert info[PRIVILEGED_KEY] == {"answer": "word1", "hints": ["short", "lower case"], "weight": 0.5}
    info[PRIVILEGED_KEY]["hints"].append("edited")
    *_, info = env.step("nope")
    assert info[PRIVILEGED_KEY]["hints"] == ["short", "lower case"]  # neither the env nor later infos changed
    *_, info = env.step("word1")  # the last step carries it too
    assert info["won"] and privileged_of(info) == env._secret


def test_off_by_default():
    """Regression (issue 26): every env's infos held what the agent must not see unless stripped."""
    env = SecretEnv(privileged=False)
    _, info = env.reset(options={"task_id": "t1"})
    infos = [info, env.step("nope")[4], env.step("word1")[4]]
    assert all(PRIVILEGED_KEY not in info and privileged_of(info) is None for info in infos)


def test_an_env_that_defines_none_reports_an_empty_dict():
    _, info = PlainEnv().reset(seed=0)
    assert info[PRIVILEGED_KEY] == {} and privileged_of({"task": "x"}) is None


def test_helpers():
    tree = {"a": [1, {"b": ["c"]}], "d": 2.5}
    copied = copy_json(tree)
    assert copied == tree and copied["a"] is not tree["a"] and copied["a"][1] is not tree["a"][1]
    assert is_json_stable(tree) and is_json_stable({})
    assert not is_json_stable({"a": (1, 2)})  # a tuple comes back a list
    assert not is_json_stable({1: "int key"}) and not is_json_stable({"a": float("nan")})


def test_survives_vector_info_merging():
    envs = DictInfoToList(SyncVectorEnv([SecretEnv, PlainEnv, SecretEnv], autoreset_mode=AutoresetMode.DISABLED))
    _, infos = envs.reset(seed=0)
    singles = [env.reset(seed=0)[1] for env in (SecretEnv(), PlainEnv(), SecretEnv())]
    assert [info[PRIVILEGED_KEY] for info in infos] == [info[PRIVILEGED_KEY] for info in singles]
    _, _, _, _, infos = envs.step(["nope", "nope", "nope"])
    assert infos[1][PRIVILEGED_KEY] == {} and infos[0][PRIVILEGED_KEY]["hints"] == ["short", "lower case"]
    assert [to_json_value(info[PRIVILEGED_KEY]) for info in infos] == [single[PRIVILEGED_KEY] for single in singles]
    envs.close()


def test_turn_privileged_round_trips_through_jsonl(tmp_path):
    env = SecretEnv()
    env.reset(options={"task_id": "t0"})
    *_, info = env.step("word0")
    turn = Turn("Guess.", "word0", "word0", None, 1.0, True, info=to_json_value(info))  # type: ignore[arg-type]
    assert turn.privileged == {"answer": "word0", "hints": ["short", "lower case"], "weight": 0.5}
    assert Turn("o", "r", "a", None, 0.0, True).privileged is None
    trajectory = Trajectory("t0", 0, [turn], success=True, score=1.0)
    write_jsonl(tmp_path / "t.jsonl", [trajectory])
    (loaded,) = read_jsonl(tmp_path / "t.jsonl")
    assert isinstance(loaded, Trajectory) and loaded == trajectory
    assert loaded.turns[0].privileged == turn.privileged


def test_check_env_passes_with_privileged_infos():
    from gymnasium.utils.env_checker import check_env

    check_env(SecretEnv())


def test_privileged_keys_and_strip():
    class Leaky(SecretEnv):
        privileged_info_keys = ("hint",)

    assert privileged_keys(SecretEnv()) == {PRIVILEGED_KEY} and privileged_keys(Leaky()) == {PRIVILEGED_KEY, "hint"}
    info = {"task_id": "t0", "hint": "w", PRIVILEGED_KEY: {}}
    assert strip_privileged(info, privileged_keys(Leaky())) == {"task_id": "t0"}
    assert strip_privileged(info) == {"task_id": "t0", "hint": "w"} and PRIVILEGED_KEY in info  # a copy
