import gc
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
