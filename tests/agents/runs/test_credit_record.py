import json

import pytest

from agentenvs.core.trajectory import TrajectoryGroup
from agents.algorithms import make_credit_rule
from agents.algorithms.base import CreditContext
from agents.config import GRPOConfig
from agents.runs.credit_record import (
    credit_records,
    drop_steps_after,
    read_records,
    read_step,
    recorded_groups,
    recorded_steps,
    step_path,
    token_offsets,
    write_step,
)
from tests.support.privileged import CharScorer, batch_from_groups, toy_group


def chars(ids):
    return "".join(chr(i) for i in ids)


def pen_rule(prompt, token, position):
    privileged = "Guidance from successful" in prompt
    return -1.0 + (0.0 if not privileged else (0.3 if chr(token) in "pen" else -0.1))


def taspo_step():
    """A TASPO step over a mixed group (position 1) and an all-failed one (position 0)."""
    scorer = CharScorer(pen_rule)
    failed = TrajectoryGroup("toy2", 1, [t for t in toy_group(1, "toy2") if not t.success])
    batch = batch_from_groups([failed, toy_group(0, "toy")], scorer)
    config = GRPOConfig(credit="taspo", credit_options={"epsilon_w": 0.5})
    credit = make_credit_rule("taspo", config).compute(batch, CreditContext(config, policy=scorer))
    return batch, credit


def test_token_offsets_cover_the_decoded_text_and_give_split_characters_to_the_completing_token():
    assert token_offsets(chars, [104, 105], prefix_length=3) == [(3, 4), (4, 5)]

    # "é" as two byte tokens: the first decodes to nothing, the second completes it.
    def utf8(ids):
        return bytes(ids).decode("utf-8", errors="ignore")

    assert token_offsets(utf8, [0x61, 0xC3, 0xA9, 0x62]) == [(0, 1), (1, 1), (1, 2), (2, 3)]
    assert token_offsets(utf8, []) == []


def test_groups_with_differing_outcomes_are_recorded_first_in_batch_order():
    batch, _ = taspo_step()
    assert recorded_groups(batch, 1) == [1]  # the mixed group, though it comes second
    assert recorded_groups(batch, 2) == [0, 1]
    assert recorded_groups(batch, 5) == [0, 1] and recorded_groups(batch, 0) == []


def test_records_hold_the_rules_per_token_values_text_and_offsets():
    batch, credit = taspo_step()
    records = credit_records(batch, credit, step=3, rule="taspo", groups=1, decode=chars, response_prefix="")
    assert [r["member"] for r in records] == [0, 1, 2, 3]
    assert {r["group"] for r in records} == {1} and {r["task_id"] for r in records} == {"toy"}
    outcome = credit.trajectory_values["advantage"]
    for record in records:
        index = record["trajectory"]
        assert index == 2 + record["member"]  # the failed group holds trajectories 0 and 1
        trajectory = batch.trajectories[index]
        assert record["success"] == trajectory.success and record["step"] == 3 and record["version"] == 1
        assert record["values"]["advantage"] == pytest.approx(float(outcome[index]), abs=1e-6)
        assert len(record["turns"]) == len(trajectory.turns)
        for turn in record["turns"]:
            row = next(
                r
                for r in range(len(batch))
                if int(batch.trajectory_index[r]) == index and int(batch.turn_index[r]) == turn["turn"]
            )
            length = int(batch.response_mask[row].sum())
            values = turn["values"]
            assert set(values) == {"advantage", "logprob", "delta", "weight"}
            for name, tensor in (
                ("advantage", credit.advantages),
                ("logprob", batch.old_logprobs),
                ("delta", credit.token_values["delta"]),
                ("weight", credit.token_values["weight"]),
            ):
                assert values[name] == pytest.approx(tensor[row, :length].tolist(), abs=1e-6)
            raw = turn["raw_output"]
            assert [raw[s:e] for s, e in turn["token_offsets"]] == list(raw)  # one character a token here
            assert turn["token_ids"] == [ord(c) for c in raw]
            start, end = turn["action_span"]
            assert raw[start:end] == turn["action"] and turn["action_tokens"] == [start, end]
            assert turn["info"]["privileged"] == credit.row_info["privileged"][row]
    # A hand-checked value: TASPO's lose_b (trajectory 3 of the mixed group) has turn weights
    # 1.25, 0.5, 1.25 on A_i < 0 (see the TASPO rule test).
    lose_b = next(r for r in records if r["trajectory"] == 5)
    a_i = lose_b["values"]["advantage"]
    assert a_i < 0
    assert [t["values"]["weight"][0] for t in lose_b["turns"]] == pytest.approx([1.25, 0.5, 1.25], abs=1e-5)
    assert [t["values"]["advantage"][0] for t in lose_b["turns"]] == pytest.approx(
        [1.25 * a_i, 0.5 * a_i, 1.25 * a_i], abs=1e-5
    )
    json.dumps(records)  # JSON values only


def test_a_response_prefix_shifts_the_offsets_into_the_raw_output():
    batch, credit = taspo_step()
    record = credit_records(batch, credit, step=1, rule="taspo", groups=1, decode=chars, response_prefix="<a>")[0]
    assert record["turns"][0]["token_offsets"][0] == [3, 4]


def test_step_files_are_written_whole_listed_and_dropped_after_a_step(tmp_path):
    for step in (1, 2, 10):
        write_step(tmp_path, step, [{"step": step, "n": 0}, {"step": step, "n": 1}])
    (tmp_path / "credit" / "notes.txt").write_text("not a step")
    assert recorded_steps(tmp_path) == [1, 2, 10]
    assert read_step(tmp_path, 2) == [{"step": 2, "n": 0}, {"step": 2, "n": 1}]
    assert read_step(tmp_path, 3) == [] and recorded_steps(tmp_path / "nowhere") == []
    assert sorted(p.name for p in (tmp_path / "credit").iterdir()) == [
        "notes.txt",
        "step_1.jsonl",
        "step_10.jsonl",
        "step_2.jsonl",
    ]  # no staging file left behind
    assert drop_steps_after(tmp_path, 1) == [2, 10]
    assert recorded_steps(tmp_path) == [1] and step_path(tmp_path, 1).is_file()


def test_a_half_written_file_is_read_up_to_its_last_complete_record(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n\n{"step": 1}\n{"step": 2, "loss": 0.')
    assert read_records(path) == [{"step": 0}, {"step": 1}]
    path.write_text('{"step": 0}\n{"step": 1, "lo\n{"step": 2}\n')  # a torn line: stop there
    assert read_records(path) == [{"step": 0}]
    path.write_text("")
    assert read_records(path) == []


def test_the_record_of_a_zero_group_config_is_empty():
    batch, credit = taspo_step()
    assert credit_records(batch, credit, step=1, rule="taspo", groups=0, decode=chars) == []


def test_record_groups_is_validated_by_the_config():
    assert GRPOConfig().record_groups == 2 and GRPOConfig(record_groups=0).record_groups == 0
    with pytest.raises(ValueError, match=r"GRPOConfig.record_groups must be an integer >= 0, got -1"):
        GRPOConfig(record_groups=-1)


def test_step_files_are_readable_by_others(tmp_path):
    path = write_step(tmp_path, 1, [{"step": 1}])
    assert path.stat().st_mode & 0o777 == 0o644
