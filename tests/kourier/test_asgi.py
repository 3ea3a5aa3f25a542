import sys


def test_the_web_process_hands_the_gil_over_sooner_than_python_does_by_default():
    default = sys.getswitchinterval()
    try:
        from kourier import asgi

        assert sys.getswitchinterval() == asgi.WEB_SWITCH_INTERVAL_SECONDS < 0.005
    finally:
        sys.setswitchinterval(default)
