"""What a process pays to start: ``import simforge`` and an episode of a shipped scenario load
only what the env needs (no web server, CLI, terminal rendering, statistics or Gymnasium), and
Gymnasium still knows every scenario once it is imported, in either order."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("gymnasium", "numpy", "fastapi", "starlette", "uvicorn", "typer", "rich", "httpx",
         "scipy", "statsmodels", "ijson", "jinja2", "mcp", "openai", "psycopg", "jsonschema")


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_episode_imports_no_server_cli_or_statistics_stack():
    code = (
        "import json, sys, simforge\n"
        "env = simforge.make('acme/refund-damaged-order-v1')\n"
        "env.reset(seed=0)\n"
        "env.step({'tool_calls': [{'name': 'get_order', 'arguments': {'order_id': 'O-1'}}]})\n"
        "env.step({'final_answer': 'done'})\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_gymnasium_knows_the_scenarios_whichever_is_imported_first():
    for first, second in (("simforge", "gymnasium"), ("gymnasium", "simforge")):
        result = _run(
            f"import json, sys, {first}\n"
            "before = 'gymnasium' in sys.modules\n"
            f"import {second}\n"
            "import gymnasium\n"
            "env = gymnasium.make('acme/refund-damaged-order-v1')\n"
            "print(json.dumps({'before': before, 'env': type(env.unwrapped).__name__,\n"
            "    'loader': type(gymnasium.__spec__.loader).__name__}))\n"
        )
        assert result["env"] == "SimforgeGymEnv"
        assert result["before"] is (first == "gymnasium")
        # the hook hands Gymnasium back its own loader once it has run
        assert result["loader"] == "SourceFileLoader"


def test_a_failing_registration_warns_and_leaves_gymnasium_imported():
    result = _run(
        "import json, warnings\n"
        "from simforge.env.gym_hook import register_when_imported\n"
        "def broken():\n"
        "    raise OSError('scenario folder unreadable')\n"
        "register_when_imported(broken)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import gymnasium\n"
        "print(json.dumps({'ok': hasattr(gymnasium, 'make'),\n"
        "    'warned': [str(w.message) for w in caught if 'simforge' in str(w.message)]}))\n"
    )
    assert result["ok"] is True
    assert result["warned"] == ["simforge: registering scenarios with Gymnasium failed: "
                                "OSError: scenario folder unreadable"]


def test_lazy_trace_names_stay_the_functions_after_their_modules_load():
    """``simforge.trace.ingest`` is the function even after ``simforge.trace.ingest`` the
    module (and ``simforge.trace.formats`` the adapters' package) has been imported."""
    result = _run(
        "import json\n"
        "import simforge.trace.ingest, simforge.trace.formats.openai\n"
        "import simforge.trace as t\n"
        "print(json.dumps([callable(t.ingest), type(t.ingest).__name__,\n"
        "    type(t.formats).__name__, t.IngestResult.__name__]))\n"
    )
    assert result == [True, "function", "function", "IngestResult"]
