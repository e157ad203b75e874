import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.algorithms.orsd.rubrics import RubricItem
from agents.algorithms.orsd.verifiers import LMVerifier
from agents.algorithms.privileged.endpoints import OpenAIChatClient
from tests.support.privileged import toy_group


class FakeChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions answering 'yes' to every numbered item."""

    requests: list = []

    def do_POST(self):  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeChat.requests.append((self.path, body, self.headers.get("Authorization")))
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        prompt = body["messages"][-1]["content"]
        numbers = [line.split(".")[0] for line in prompt.splitlines() if line[:1].isdigit() and ". " in line]
        content = "\n".join(f"{n}: yes" for n in numbers if "Rubric items:" in prompt) or "ok"
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    FakeChat.requests = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_client_posts_chat_completions_with_model_and_key(server, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "secret")
    client = OpenAIChatClient(f"{server}/v1", "judge", api_key_env="FAKE_KEY", max_tokens=7)
    assert client(["hello", "again"]) == ["ok", "ok"]
    path, body, auth = FakeChat.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "judge" and body["max_tokens"] == 7
    assert auth == "Bearer secret"


def test_lm_verifier_through_endpoint(server):
    items = [RubricItem("text", "Picks up the pen."), RubricItem.requires("look")]
    matrix = LMVerifier(OpenAIChatClient(f"{server}/v1", "judge"))(items, toy_group().trajectories)
    assert matrix.tolist() == [[1, 1, 1, 1], [0, 1, 1, 1]]
    assert len(FakeChat.requests) == 4


def test_client_errors_name_the_url(server):
    client = OpenAIChatClient(f"{server}/wrong", "judge", retries=0)
    with pytest.raises(RuntimeError, match="/wrong/chat/completions"):
        client(["x"])


def test_client_validates_at_construction():
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatClient("localhost:8000", "m")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIChatClient("http://x", "m", concurrency=0)
