#!/usr/bin/env python3
"""The local-model eval: the task set in tasks.py, run through agentd against a local
OpenAI-compatible server (llama.cpp's llama-server, Ollama, vLLM, LM Studio) with both wire
formats, beside the same model answering directly with no tools. Prints one row per task and the
pass rate of each way; the task directories are kept for reading (the agent's output in `.log`).

    python3 tests/benches/local_model/eval.py --url http://127.0.0.1:8080 [--ways direct,openai,anthropic]
        [--model NAME] [--tasks slugify,fix_mean] [--timeout 300] [--agentctl target/release/agentctl]

Not part of the test suite: it needs a model server, and a run takes minutes (about 20 on two
cores for a 1.5B model). Results vary with the model, its quantisation, the server's template and
its sampling; compare runs made against the same server.
"""
import argparse, json, os, re, shutil, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tasks import TASKS  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def get_json(url, body=None, timeout=600):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def model_of(url):
    models = get_json(f"{url}/v1/models").get("data", [])
    if len(models) != 1:
        sys.exit(f"the server serves {len(models)} models; name one with --model")
    return models[0]["id"]


def make(task, root):
    directory = os.path.join(root, task["name"])
    os.makedirs(directory)
    for name, text in task["files"].items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    return directory


def grade(task, directory):
    try:
        done = subprocess.run([sys.executable, "-c", task["check"]], cwd=directory, capture_output=True,
                              timeout=20)
        return done.returncode == 0
    except subprocess.TimeoutExpired:
        return False


def direct(task, directory, url, model, timeout):
    """The model alone: the prompt with the files' content, one reply, no tools."""
    shown = "\n\n".join(f"{name}:\n```\n{text}```" for name, text in task["files"].items())
    ask = f"{task['prompt']}\n\n{shown}"
    if task["target"]:
        ask += f"\n\nReply with the complete new content of {task['target']} in one code block."
    body = {"model": model, "temperature": 0, "max_tokens": 2048,
            "messages": [{"role": "user", "content": ask}]}
    reply = get_json(f"{url}/v1/chat/completions", body, timeout)["choices"][0]["message"]["content"] or ""
    if task["target"]:
        block = re.search(r"```[a-zA-Z0-9_+-]*\n(.*?)```", reply, re.S)
        with open(os.path.join(directory, task["target"]), "w") as f:
            f.write(block.group(1) if block else reply)
    else:
        with open(os.path.join(directory, ".answer"), "w") as f:
            f.write(reply)


def through_agentd(task, directory, wire, model, timeout, env, agentctl):
    command = [agentctl, "run", "--provider", wire, "--model", model, "--yes", "--max-turns", "12",
               task["prompt"]]
    with open(os.path.join(directory, ".answer"), "w") as answer, \
            open(os.path.join(directory, ".log"), "w") as log:
        try:
            subprocess.run(command, cwd=directory, env=env, stdin=subprocess.DEVNULL, stdout=answer,
                           stderr=log, timeout=timeout)
        except subprocess.TimeoutExpired:
            log.write(f"\n(timed out after {timeout} s)\n")


def agentd_env(url):
    home = tempfile.mkdtemp(prefix="eval-home.")
    os.makedirs(os.path.join(home, "config"))
    with open(os.path.join(home, "config", "config.toml"), "w") as f:
        f.write("[checkpoints]\nenabled = false\n")
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTD_SOCKET", "XDG_RUNTIME_DIR")}
    env.update({"AGENTD_HOME": home, "NO_COLOR": "1", "OPENAI_BASE_URL": f"{url}/v1",
                "OPENAI_API_KEY": "none", "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "none"})
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("EVAL_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--model")
    parser.add_argument("--ways", default="direct,openai,anthropic")
    parser.add_argument("--tasks")
    parser.add_argument("--timeout", type=int, default=300)
    default_agentctl = os.path.join(REPO, "target", "release", "agentctl")
    parser.add_argument("--agentctl", default=default_agentctl if os.path.exists(default_agentctl)
                        else shutil.which("agentctl") or "agentctl")
    args = parser.parse_args()
    url = args.url.rstrip("/").removesuffix("/v1")
    model = args.model or model_of(url)
    tasks = [t for t in TASKS if not args.tasks or t["name"] in args.tasks.split(",")]
    ways = args.ways.split(",")
    root = tempfile.mkdtemp(prefix="eval.")
    print(f"model {model} at {url}; tasks in {root}", flush=True)
    print(f"{'task':<16}" + "".join(f"{w:>11}" for w in ways), flush=True)
    passed = {w: 0 for w in ways}
    seconds = {w: 0.0 for w in ways}
    env = agentd_env(url)
    for task in tasks:
        row = f"{task['name']:<16}"
        for way in ways:
            directory = make(task, os.path.join(root, way))
            started = time.time()
            if way == "direct":
                direct(task, directory, url, model, args.timeout)
            else:
                through_agentd(task, directory, way, model, args.timeout, env, args.agentctl)
            seconds[way] += time.time() - started
            ok = grade(task, directory)
            passed[way] += ok
            row += f"{'PASS' if ok else 'fail':>11}"
        print(row, flush=True)
    print(f"{'passed':<16}" + "".join(f"{f'{passed[w]}/{len(tasks)}':>11}" for w in ways))
    print(f"{'minutes':<16}" + "".join(f"{seconds[w] / 60:>11.1f}" for w in ways))
    subprocess.run([args.agentctl, "daemon", "stop"], env=env, capture_output=True)


if __name__ == "__main__":
    main()
