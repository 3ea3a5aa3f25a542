import gc
import os
import subprocess
import sys


def test_the_web_process_hands_the_gil_over_sooner_than_python_does_by_default():
    default = sys.getswitchinterval()
    try:
        from kourier import asgi

        assert sys.getswitchinterval() == asgi.WEB_SWITCH_INTERVAL_SECONDS < 0.005
    finally:
        sys.setswitchinterval(default)


def test_the_web_process_keeps_what_start_up_made_out_of_the_collectors_full_passes():
    from kourier import asgi  # noqa: F401  (importing it is starting the web process)

    assert gc.get_freeze_count() > 0


def test_the_web_process_imports_neither_the_simulator_nor_the_demo_agent(tmp_path):
    """The other side of the wire runs beside the product: a web process that serves the simulator's
    page speaks to it over HTTP, and loads none of the emulation."""
    script = (
        "import sys\n"
        "from kourier import asgi, urls\n"
        "from django.urls import resolve\n"
        "assert resolve('/simulator/').func.__module__ == 'kourier.simulator_page'\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('simulator', 'demo_agent')))\n"
    )
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kourier.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        "SECRET_KEY": "test-secret-key",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
