"""Ask gatehost serve for a verdict, with the Python standard library only.

Start a server from the repository root (`make build`, then
`build/gatehost serve`), then run `python3 examples/python/check.py`.
Set GATEHOST_URL (default http://127.0.0.1:8490) and, when the server
requires one, GATEHOST_TOKEN.

Only "accepted" lets an action go ahead: "rejected" and "inconclusive"
both stop it (gatehost is fail-closed).
"""

import json
import os
import urllib.error
import urllib.request

URL = os.environ.get("GATEHOST_URL", "http://127.0.0.1:8490")
TOKEN = os.environ.get("GATEHOST_TOKEN")


def check(pipeline, subject, request_id):
    """POST a subject; return the Decision (HTTP 200 whatever the verdict)."""
    req = urllib.request.Request(
        f"{URL}/v1/pipelines/{pipeline}/check",
        data=json.dumps(subject).encode(),
        headers={"Content-Type": "application/json", "X-Request-Id": request_id},
    )
    if TOKEN:
        req.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:  # 4xx/5xx: a typed error, not a verdict
        err = json.load(e)["error"]
        raise SystemExit(f"{e.code} {err['code']}: {err['message']}")


# An OpenAI assistant message: two calls the GitHub catalog knows.
plan = {"role": "assistant", "tool_calls": [
    {"id": "1", "type": "function", "function": {"name": "get_me", "arguments": "{}"}},
    {"id": "2", "type": "function", "function": {
        "name": "list_issues", "arguments": json.dumps({"owner": "octo-org", "repo": "widgets"})}},
]}
# An MCP tools/call for a tool no catalog has.
unknown = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": "delete_everything", "arguments": {}}}
# A merge whose build/test cannot run here: nothing proves it safe.
merge = {"base": "main", "head": "feature",
         "file_changes": [{"path": "README.md", "before": "old\n", "after": "new\n"}]}

for pipeline, subject, rid in [("admission", plan, "py-1"),
                               ("admission", unknown, "py-2"),
                               ("merge", merge, "py-3")]:
    d = check(pipeline, subject, rid)
    why = [f["code"] for f in d["findings"] if f["severity"] == "blocking"]
    why += [s["reason"] for s in d["stages"] if s.get("reason")]
    print(f"{rid} {pipeline:9} {d['verdict']:12} run={d['run_id']} {', '.join(why)}")
