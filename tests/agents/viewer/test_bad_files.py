"""Hostile and broken run folders: a bad file shows as a bad file, never a 500; no markup injection; long
trajectories come in pages."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser

import pytest

from agents.runs.credit_record import write_step
from agents.viewer import create_app
from agents.viewer.app import TOKENS_PER_PAGE

HOSTILE = "x onmouseover=alert(1) y"
QUOTED = '" onmouseover="alert(1)'


class Tags(HTMLParser):
    """Every start tag's attribute names, and the text of every ``<script>``."""

    def __init__(self) -> None:
        super().__init__()
        self.attributes: list[tuple[str, str]] = []
        self.scripts = 0
        self.token_spans = 0

    def handle_starttag(self, tag, attrs):
        self.attributes.extend((tag, name) for name, _ in attrs)
        self.scripts += tag == "script"
        self.token_spans += tag == "span" and "tok" in (dict(attrs).get("class") or "").split()


def parsed(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def hostile_record() -> dict:
    """A credit record whose every name and text is an injection attempt."""
    return {
        "step": 1,
        "rule": QUOTED,
        "group": 0,
        "member": 0,
        "task_id": QUOTED,
        "task": "<script>alert(1)</script>",
        "success": True,
        "score": 1.0,
        "reward": 1.0,
        "values": {HOSTILE: 0.5, "advantage": 0.5},
        "turns": [
            {
                "turn": 0,
                "prompt": "<script>alert(1)</script>",
                "observation": QUOTED,
                "raw_output": "ab",
                "action": QUOTED,
                "action_span": [0, 2],
                "reward": 0.0,
                "valid": True,
                "token_ids": [97, 98],
                "token_offsets": [[0, 1], [1, 2]],
                "values": {"advantage": [0.5, -0.5], HOSTILE: [1.0, 2.0]},
                "info": {HOSTILE: 3.0, QUOTED: QUOTED},
            }
        ],
    }


def test_names_and_texts_from_a_run_folder_never_become_markup(tmp_path):
    run = tmp_path / "run"
    write_step(run, 1, [hostile_record()])
    (run / "config.json").write_text(json.dumps({"model": QUOTED, "env": HOSTILE, "config": {"credit": QUOTED}}))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "eval/success_rate": 0.5, HOSTILE: 1.0}) + "\n")
    (run / "trajectories").mkdir()
    episode = {k: v for k, v in hostile_record().items() if k != "values"}
    (run / "trajectories" / "eval_step_1.jsonl").write_text(json.dumps(episode) + "\n")
    client = create_app([run]).test_client()
    pages = ["/", "/run/run", "/run/run/step/1", "/run/run/step/1/trajectory/0", "/run/run/eval/1"]
    pages.append("/run/run/eval/1/trajectory/0")
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        tags = parsed(response.get_data(as_text=True))
        assert not [name for _, name in tags.attributes if name.startswith("on") or name in {"y", "alert(1)"}], url
        assert tags.scripts == 1, url  # base.html's own script, no other
    trajectory = client.get("/run/run/step/1/trajectory/0").get_data(as_text=True)
    assert "not a plain name" in trajectory  # the page says why the hostile value was left out


GOOD_EPISODE = {"task_id": "t", "success": True, "score": 1.0, "turns": []}


def lines(*records) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


# (file in the run folder, its bytes, the page that reads it, what that page must say)
BAD_FILES = [
    ("metrics.jsonl", b"[" * 100_000 + b"\n", "/run/bad", "metrics.jsonl line 1"),
    ("metrics.jsonl", lines({"step": 0}, {"eval/success_rate": 0.5}), "/run/bad", "no whole-number step"),
    ("metrics.jsonl", lines({"step": 0, "eval/success_rate": "high"}), "/run/bad", "eval/success_rate"),
    ("metrics.jsonl", lines({"step": 0, "eval/success_rate": 7}), "/run/bad", "eval/success_rate"),
    ("metrics.jsonl", lines({"step": 0, "train/mean_reward": 10**400}), "/run/bad", "metrics.jsonl line 1"),
    ("metrics.jsonl", b'{"step": 0}\n{"step": 1, "train/me\n', "/run/bad", "metrics.jsonl line 2: not JSON"),
    ("metrics.jsonl", b'{"step": 0, "env": "\xff\xfe"}\n', "/run/bad", "not UTF-8"),
    ("metrics.jsonl", lines([1, 2]), "/run/bad", "not a JSON object"),
    ("config.json", b'{"config": []}', "/run/bad", "config.json: config is not an object"),
    ("config.json", b"", "/run/bad", "config.json: not JSON"),
    ("config.json", b"\xff\xfe\x00", "/run/bad", "config.json: not UTF-8"),
    ("config.json", b"[" * 100_000, "/run/bad", "config.json: nested deeper than"),
    ("config.json", b'{"config": {"eval_episodes": -3}}', "/run/bad", "eval_episodes"),
    ("trajectories/eval_step_1.jsonl", lines({"trajectories": 5}), "/run/bad/eval/1", "trajectories is not a list"),
    (
        "trajectories/eval_step_1.jsonl",
        lines({**GOOD_EPISODE, "score": "high"}),
        "/run/bad/eval/1",
        "score is not a number",
    ),
    (
        "trajectories/eval_step_1.jsonl",
        lines({**GOOD_EPISODE, "turns": [{"action_span": {"from": 1}}]}),
        "/run/bad/eval/1",
        "action_span",
    ),
    ("trajectories/eval_step_1.jsonl", b"", "/run/bad/eval/1", "eval_step_1.jsonl: no complete record"),
    ("trajectories/eval_step_1.jsonl", b"\xff\n", "/run/bad/eval/1", "not UTF-8"),
    ("credit/step_1.jsonl", b"", "/run/bad/step/1", "step_1.jsonl: no complete record"),
    ("credit/step_1.jsonl", lines({"turns": 5}), "/run/bad/step/1", "turns is not a list"),
    ("credit/step_1.jsonl", lines({"score": "high", "turns": []}), "/run/bad/step/1", "score is not a number"),
    (
        "credit/step_1.jsonl",
        lines({"turns": [{"turn": 0, "token_offsets": 3, "values": {"advantage": ["x"]}}]}),
        "/run/bad/step/1",
        "credit/step_1.jsonl line 1",
    ),
    ("credit/step_1.jsonl", b"[" * 100_000 + b"\n", "/run/bad/step/1", "credit/step_1.jsonl line 1"),
    ("credit_examples.jsonl", b'{"step": 1, "x": ' + b"[" * 5_000 + b"\n", "/run/bad/step/1", "line 1"),
]


@pytest.mark.parametrize(("name", "data", "url", "message"), BAD_FILES, ids=[f"{c[0]}:{c[3]}" for c in BAD_FILES])
def test_a_bad_file_is_named_on_its_runs_pages_and_every_other_run_still_shows(
    run_folder, tmp_path, name, data, url, message
):
    bad = tmp_path / "bad"
    shutil.copytree(run_folder, bad)
    (bad / name).parent.mkdir(parents=True, exist_ok=True)
    (bad / name).write_bytes(data)
    client = create_app([run_folder, bad]).test_client()
    index = client.get("/")
    assert index.status_code == 200
    html = index.get_data(as_text=True)
    assert 'data-run="taspo-run"' in html and 'data-run="bad"' in html
    for page in ("/run/bad", url, "/curves.svg", "/compare?run=taspo-run&run=bad"):
        response = client.get(page)
        assert response.status_code < 500, (page, response.get_data(as_text=True)[:300])
    response = client.get(url)
    text = response.get_data(as_text=True)
    assert message in text and "Traceback" not in text
    good = client.get("/run/taspo-run").get_data(as_text=True)
    assert 'class="problems"' not in good and 'data-step="1"' in good


def test_a_bad_line_costs_only_that_line(run_folder):
    with (run_folder / "metrics.jsonl").open("ab") as out:  # after the half-written line of a running trainer
        out.write(b"\n" + b"[" * 100_000 + b"\n" + json.dumps({"step": 5, "train/mean_reward": 0.4}).encode() + b"\n")
    html = create_app([run_folder]).test_client().get("/run/taspo-run").get_data(as_text=True)
    assert 'data-step="1"' in html and 'data-step="5"' in html
    assert "metrics.jsonl line 3: not JSON" in html and "metrics.jsonl line 4: nested deeper than" in html


def long_record(tokens: int, turns: int) -> dict:
    each = tokens // turns
    return {
        "step": 1,
        "group": 0,
        "member": 0,
        "success": False,
        "score": 0.0,
        "reward": 0.0,
        "values": {"advantage": -0.5},
        "turns": [
            {
                "turn": turn,
                "raw_output": "a" * each,
                "action_span": [0, 1],
                "token_ids": [97] * each,
                "token_offsets": [[k, k + 1] for k in range(each)],
                "values": {"advantage": [0.001 * k for k in range(each)], "logprob": [-1.0] * each},
            }
            for turn in range(turns)
        ],
    }


@pytest.mark.parametrize("turns", [1, 100])
def test_a_200k_token_trajectory_comes_in_pages(tmp_path, turns):
    write_step(tmp_path / "long", 1, [long_record(200_000, turns)])
    client = create_app([tmp_path / "long"]).test_client()
    pages = -(-200_000 // TOKENS_PER_PAGE)
    first = client.get("/run/long/step/1/trajectory/0").get_data(as_text=True)
    assert parsed(first).token_spans == TOKENS_PER_PAGE and len(first) < 2_000_000
    assert f"tokens page 1 of {pages}" in first and "/run/long/step/1/trajectory/0?page=2" in first
    last = client.get(f"/run/long/step/1/trajectory/0?page={pages}").get_data(as_text=True)
    assert parsed(last).token_spans == 200_000 - (pages - 1) * TOKENS_PER_PAGE
    assert f'data-turn="{turns - 1}"' in last
    assert client.get(f"/run/long/step/1/trajectory/0?page={pages + 1}").status_code == 404


@pytest.mark.parametrize("privileged", [{"rubric": ["a"]}, ["a", "b"], 3])
def test_a_privileged_text_that_is_not_text_is_shown_as_json(tmp_path, privileged):
    record = hostile_record()
    record["turns"][0]["info"] = {"privileged": privileged}
    write_step(tmp_path / "run", 1, [record, {**record, "member": 1}])
    client = create_app([tmp_path / "run"]).test_client()
    assert client.get("/run/run/step/1").status_code == 200
    assert client.get("/run/run/step/1/trajectory/0").status_code == 200


def test_surrogates_math_text_huge_values_and_links_out_never_500(run_folder, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(run_folder, bad)
    (bad / "config.json").write_text('{"model": "m\\ud800", "env": "E-v0", "config": {"credit": "grpo"}}')
    records = [
        {"step": 1, "train/mean_reward": 1e308, "grpo/$\\foo$_abs_mean": 0.5, "advantage_abs_mean": -1e308},
        {"step": 2, "train/mean_reward": -1e308, "grpo/$\\foo$_abs_mean": 0.4, "advantage_abs_mean": 1e308},
    ]
    (bad / "metrics.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    outside = tmp_path / "secret.jsonl"
    outside.write_text(json.dumps({"step": 5, "group": 0, "member": 0, "turns": [], "values": {}}) + "\n")
    (bad / "credit" / "step_5.jsonl").symlink_to(outside)
    client = create_app([run_folder, bad]).test_client()
    for page in ("/", "/run/bad", "/curves.svg?run=bad", "/curves.svg", "/compare?run=taspo-run&run=bad"):
        response = client.get(page)
        assert response.status_code == 200, (page, response.get_data(as_text=True)[:300])
    assert "m\ufffd" in client.get("/").get_data(as_text=True)
    step = client.get("/run/bad/step/5")
    assert step.status_code < 500 and "secret" not in step.get_data(as_text=True)
    assert "a link out of the run folder (not followed)" in step.get_data(as_text=True)
