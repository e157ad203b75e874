"""The viewer's pages through Flask's test client, on records made by a real credit rule."""

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape

import agents.viewer.store as store_module
from agents.cli import main
from agents.runs.credit_record import credit_records, write_step
from agents.viewer import create_app
from agents.viewer.heatmap import colour
from tests.agents.runs.test_credit_record import chars


class Tokens(HTMLParser):
    """The heatmap's token spans: their data- attributes and inline style."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "span" and "tok" in (attributes.get("class") or "").split():
            self.tokens.append({k: v or "" for k, v in attributes.items()})


def tokens_of(html: str) -> list[dict[str, str]]:
    parser = Tokens()
    parser.feed(html)
    return parser.tokens


@pytest.fixture()
def client(run_folder):
    return create_app([run_folder]).test_client()


def test_the_trajectory_page_shows_every_token_with_its_logged_values_and_colour(client, run_folder):
    records = [json.loads(line) for line in (run_folder / "credit" / "step_1.jsonl").read_text().splitlines()]
    index = next(i for i, r in enumerate(records) if r["trajectory"] == 5)  # TASPO's hand-checked lose_b
    page = client.get(f"/run/taspo-run/step/1/trajectory/{index}")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    record = records[index]
    logged = [(turn, k) for turn in record["turns"] for k in range(len(turn["token_ids"]))]
    spans = tokens_of(html)
    assert len(spans) == len(logged)
    scale = max(abs(a) for turn in record["turns"] for a in turn["values"]["advantage"])
    a_i = record["values"]["advantage"]
    shaping_scale = max(abs(a - a_i) for turn in record["turns"] for a in turn["values"]["advantage"])
    for span, (turn, k) in zip(spans, logged, strict=True):
        assert int(span["data-index"]) == k
        for name in ("advantage", "delta", "weight", "logprob"):
            assert float(span[f"data-{name}"]) == pytest.approx(turn["values"][name][k], abs=1e-6)
        assert span["data-bg-advantage"] == colour(turn["values"]["advantage"][k], scale=scale)
        # Shown at first: A − A_i (TASPO changed the credit token by token), in black text.
        shaping = colour(turn["values"]["advantage"][k] - a_i, scale=shaping_scale)
        assert span["style"] == f"background-color: {shaping}; color: #000" and span["data-fg-shaping"] == "#000"
    assert re.search(r'value="shaping" checked', html) and "the colours show A − A_i" in html
    # A − A_i: what TASPO changed on top of the outcome advantage, (w − 1)·A_i.
    for span in spans:
        expected = (float(span["data-weight"]) - 1) * a_i
        assert float(span["data-shaping"]) == pytest.approx(expected, abs=1e-5)
    weights = [float(s["data-weight"]) for s in spans]
    assert {round(w, 4) for w in weights} == {1.25, 0.5}  # the hand-checked turn weights
    assert "Guidance from successful attempts" in html  # the PI text the turns were scored with
    assert html.count('class="tok in-action') == sum(
        t["action_tokens"][1] - t["action_tokens"][0] for t in record["turns"]
    )


def test_a_trajectory_of_a_uniform_outcome_group_says_why_nothing_is_coloured(client, run_folder):
    records = [json.loads(line) for line in (run_folder / "credit" / "step_1.jsonl").read_text().splitlines()]
    index = next(i for i, r in enumerate(records) if r["task_id"] == "toy2")  # TASPO's all-failed group
    assert all(a == 0 for turn in records[index]["turns"] for a in turn["values"]["advantage"])
    html = client.get(f"/run/taspo-run/step/1/trajectory/{index}").get_data(as_text=True)
    note = re.search(r'<p class="credit-note no-credit" id="no-credit">(.*?)</p>', html, re.S)
    assert note is not None
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", note.group(1)))
    assert "Nothing is coloured: every token's advantage is 0." in text
    assert (
        f"Every trajectory of group {records[index]['group']} got the same return R = 0.000 (a uniform outcome)" in text
    )
    assert "every token 0.000: nothing to colour" in html  # the legend's scale says so too
    mixed = next(i for i, r in enumerate(records) if r["task_id"] != "toy2")
    assert 'id="no-credit"' not in client.get(f"/run/taspo-run/step/1/trajectory/{mixed}").get_data(as_text=True)


def test_tokens_a_font_may_not_draw_show_as_escapes(client, run_folder):
    path = run_folder / "credit" / "step_1.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    turn = records[0]["turns"][0]
    assert turn["raw_output"].startswith("<think>ok</think>") and turn["token_offsets"][7] == [7, 8]
    # As a random vocabulary decodes: a control character, a lone UTF-8 piece, a script fonts may lack.
    turn["raw_output"] = "<think>" + "\x07\ufffd" + "</think>" + turn["raw_output"][17:].replace("drawer", "中rawer")
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    html = client.get("/run/taspo-run/step/1/trajectory/0").get_data(as_text=True)
    spans = tokens_of(html)
    assert len(spans) == sum(len(t["token_ids"]) for t in records[0]["turns"])  # still one span per token
    for escaped in ("\\x07", "\\ufffd", "\\u4e2d"):
        assert f'<span class="esc">{escaped}</span>' in html
    assert "\x07" not in html and "中" not in html and "\ufffd" not in html


def test_the_step_page_puts_groups_side_by_side_and_filters(client):
    html = client.get("/run/taspo-run/step/1").get_data(as_text=True)
    assert html.count('class="group"') == 2 and html.count('class="card ') == 6
    # TASPO's PI differs turn by turn: no group-wide PI, a count per trajectory (all 4 of the mixed group).
    assert "group-pi" not in html and html.count('class="pi-turns"') == 4
    wins = client.get("/run/taspo-run/step/1?outcome=success").get_data(as_text=True)
    assert wins.count('class="card win"') == 2 and 'class="card loss"' not in wins
    only = client.get("/run/taspo-run/step/1?task=toy2").get_data(as_text=True)
    assert only.count('class="card ') == 2 and "toy2" in only
    none = client.get("/run/taspo-run/step/1?task=absent").get_data(as_text=True)
    assert 'id="no-match"' in none


def test_the_run_page_lists_steps_without_reading_any_tokens(client, run_folder, monkeypatch):
    for step in range(2, 400):
        shutil.copy(run_folder / "credit" / "step_1.jsonl", run_folder / "credit" / f"step_{step}.jsonl")
    reads = []
    read = store_module.read_json_lines
    monkeypatch.setattr(
        store_module,
        "read_json_lines",
        lambda path, *args, **kw: (reads.append(path) if "credit" in path.parts else None) or read(path, *args, **kw),
    )
    (run_folder / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"step": s, "train/mean_reward": 0.1, "taspo/pi_coverage": 0.5}) + "\n" for s in range(1, 400)
        )
    )
    html = client.get("/run/taspo-run").get_data(as_text=True)
    assert reads == [] and "399 step(s) with credit records" in html
    assert html.count("<tr data-step=") == 100 and "steps page 1 of 4" in html  # a page of the table
    last = client.get("/run/taspo-run?page=4").get_data(as_text=True)
    assert last.count("<tr data-step=") == 99 and 'data-step="399"' in last
    assert client.get("/run/taspo-run?page=5").status_code == 404
    assert 'href="/run/taspo-run/step/1"' in html and 'href="/run/taspo-run/eval/1"' in html
    assert "taspo/pi_coverage" in html  # credit activity per step


def test_a_running_runs_half_written_files_are_shown_up_to_their_last_complete_record(client):
    run = client.get("/run/taspo-run").get_data(as_text=True)
    assert 'data-step="1"' in run and 'data-step="2"' not in run
    episodes = client.get("/run/taspo-run/eval/1").get_data(as_text=True)
    assert "3 of 3 episodes shown" in episodes
    failures = client.get("/run/taspo-run/eval/1?outcome=failure").get_data(as_text=True)
    assert "2 of 3 episodes shown" in failures
    episode = client.get("/run/taspo-run/eval/1/trajectory/1").get_data(as_text=True)
    assert '<span class="plain in-action">look</span>' in episode


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/run/nope", 404, "Unknown run 'nope'. This viewer serves: taspo-run."),
        ("/run/taspo-run/step/7", 404, "no credit record for step 7 (recorded: 1)"),
        ("/run/taspo-run/step/1/trajectory/60", 404, "trajectories 0 to 5, not 60"),
        ("/run/taspo-run/eval/3", 404, "no held-out trajectories for step 3 (evaluated: 1)"),
        ("/run/taspo-run/eval/1/trajectory/3", 404, "episodes 0 to 2, not 3"),
        ("/run/taspo-run/step/-1", 400, "step must be a whole number"),
        ("/run/taspo-run/step/1e3", 400, "step must be a whole number"),
        ("/run/taspo-run/step/%EF%BC%91", 400, "step must be a whole number"),  # a full-width 1
        ("/run/taspo-run/step/" + "9" * 1000, 400, "at most 9 digits"),
        ("/run/taspo-run/step/1/trajectory/" + "9" * 12, 400, "trajectory must be a whole number"),
        ("/run/taspo-run/step/1?outcome=maybe", 400, "outcome must be one of all, success, failure"),
        ("/run/taspo-run/step/1?task=" + "x" * 300, 400, "task must be at most 200 characters"),
        ("/run/taspo-run/step/1?task=" + "x" * 3000, 414, "longer than 2048 characters"),
        ("/curves.svg?smoothing=1.5", 400, "smoothing must be a number in [0, 1)"),
        ("/curves.svg?smoothing=nan", 400, "smoothing must be a number in [0, 1)"),
        ("/curves.svg?" + "&".join(["run=taspo-run"] * 9), 400, "at most 8 runs"),
        ("/compare?run=taspo-run", 400, "compare needs two or more run= parameters"),
        ("/run/taspo-run/goto?step=x", 400, "step must be a whole number"),
        ("/run/taspo-run/goto?step=1&kind=all", 400, "kind must be credit or eval"),
        ("/compare?run=taspo-run&run=..%2Fetc", 404, "Unknown run '../etc'"),
        ("/run/..%2F..%2Fetc%2Fpasswd", 404, "No viewer page at '/run/../../etc/passwd'"),
        ("/run/taspo-run/step/..%2F..%2Fconfig.json", 404, "No viewer page at"),
        ("/run/taspo-run/step/..", 400, "step must be a whole number of at most 9 digits, got '..'"),
    ],
)
def test_bad_input_gets_a_4xx_with_a_message(client, url, status, message):
    response = client.get(url)
    assert response.status_code == status
    assert response.mimetype == "text/plain" and message in response.get_data(as_text=True)


@pytest.mark.parametrize(
    "url", ["/static/../config.json", "/static/..%2Fconfig.json", "/run/taspo-run/../../config.json"]
)
def test_no_path_reaches_outside_the_viewers_own_files(client, url):
    response = client.get(url)
    assert 400 <= response.status_code < 500 and b"E-v0" not in response.data  # config.json never served


def test_a_run_folder_removed_while_serving_is_a_404(client, run_folder):
    shutil.rmtree(run_folder)
    response = client.get("/run/taspo-run")
    assert response.status_code == 404 and "folder of run 'taspo-run' is gone" in response.get_data(as_text=True)


def test_the_curves_svg_overlays_the_chosen_runs(run_folder, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run_folder, other)
    client = create_app([run_folder, other]).test_client()
    svg = client.get("/curves.svg?run=taspo-run&run=other").get_data(as_text=True)
    ids = set(re.findall(r'<g id="([^"]+)"', svg))
    assert {"taspo-run:train/mean_reward:smoothed", "other:train/mean_reward:smoothed"} <= ids
    assert "taspo-run:taspo/pi_coverage:smoothed" in ids
    compare = client.get("/compare?run=taspo-run&run=other").get_data(as_text=True)
    assert "The runs have the same settings." in compare


def test_the_view_command_names_a_missing_folder(tmp_path):
    with pytest.raises(SystemExit, match="run folder .*nowhere.* does not exist"):
        main(["view", str(tmp_path / "nowhere")])


def test_the_view_command_without_folders_serves_every_run_under_runs(tmp_path, monkeypatch, run_folder):
    import agents.viewer

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="no run folders under runs/ .none holds a metrics.jsonl.; give one or more"):
        main(["view"])
    shutil.copytree(run_folder, tmp_path / "runs" / "quickstart" / "rl")
    (tmp_path / "runs" / "scratch").mkdir()  # no metrics.jsonl: not a run
    served = []
    monkeypatch.setattr(agents.viewer, "serve", lambda folders, **_: served.append(list(folders)))
    main(["view"])
    assert served == [[str(Path("runs") / "quickstart" / "rl")]]


def test_a_gigpo_turn_shows_its_step_group_and_links_the_turns_that_share_it(tmp_path):
    from agents.algorithms import make_credit_rule
    from agents.algorithms.base import CreditContext
    from agents.config import GRPOConfig
    from tests.support.privileged import batch_from_groups, toy_group

    batch = batch_from_groups([toy_group()])
    config = GRPOConfig(credit="gigpo")
    credit = make_credit_rule("gigpo", config).compute(batch, CreditContext(config))
    write_step(tmp_path / "g", 1, credit_records(batch, credit, step=1, rule="gigpo", groups=1, decode=chars))
    html = create_app([tmp_path / "g"]).test_client().get("/run/g/step/1/trajectory/0").get_data(as_text=True)
    # Trajectory 0's first turn is in step group 0 (the start state) with turn 0 of every member,
    # and turn 0 and 1 of member 2 and 3 (credit.row_info["anchor"] = [0, 1, 2, 3, 0, 4, 5, 1, 0, 0, ...]).
    anchors = credit.row_info["anchor"]
    peers = [
        (int(batch.trajectory_index[row]), int(batch.turn_index[row]))
        for row in range(len(batch))
        if anchors[row] == anchors[0] and row != 0
    ]
    first = re.search(r'<p class="anchor-peers" data-turn="0">(.*?)</p>', html, re.S)
    assert first is not None and f"anchor {anchors[0]}" in first.group(1)
    links = re.findall(r"/run/g/step/1/trajectory/(\d+)#turn-(\d+)", first.group(1))
    assert [(int(t), int(k)) for t, k in links] == peers
    assert 'data-info="step_advantage"' in html


def test_goto_opens_a_steps_groups_or_its_held_out_episodes(client):
    assert client.get("/run/taspo-run/goto?step=1").headers["Location"] == "/run/taspo-run/step/1"
    assert client.get("/run/taspo-run/goto?step=1&kind=eval").headers["Location"] == "/run/taspo-run/eval/1"


def test_an_orsd_groups_rubric_is_shown_once_for_the_group(tmp_path):
    from agents.algorithms import make_credit_rule
    from agents.algorithms.base import CreditContext
    from agents.config import GRPOConfig
    from tests.support.privileged import CharScorer, batch_from_groups, toy_group

    scorer = CharScorer(lambda prompt, token, position: -1.0 + 0.3 * ("Process rubric" in prompt))
    batch = batch_from_groups([toy_group()], scorer)
    config = GRPOConfig(credit="orsd")
    credit = make_credit_rule("orsd", config).compute(batch, CreditContext(config, policy=scorer))
    write_step(tmp_path / "o", 1, credit_records(batch, credit, step=1, rule="orsd", groups=1, decode=chars))
    html = create_app([tmp_path / "o"]).test_client().get("/run/o/step/1").get_data(as_text=True)
    rubric = next(text for text in credit.row_info["privileged"] if text)
    assert html.count('class="info group-pi"') == 1 and escape(rubric) in html
