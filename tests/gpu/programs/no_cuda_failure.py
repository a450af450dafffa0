"""A script that fails before touching CUDA: its config file does not exist.

The ladder must stop after the baseline and say it was not a CUDA error (issue 11):
climbing would rerun a Python FileNotFoundError under every debugger and sanitizer.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


print("loading the model config", flush=True)
config = load(sys.argv[1] if len(sys.argv) > 1 else "/nonexistent/debug-ima/config.json")
print(config)
