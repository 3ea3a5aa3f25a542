"""The doors: where outside traffic comes in and is handed to the apps' services.

``slack`` (Slack's Events API and interactivity over HTTP), ``slack_listeners`` (the Bolt listeners
that HTTP and Socket Mode share) and ``alerts`` (alert sources' triggers). They sit above the apps
and below the project's glue; the adapters they use (``kourier/slack``) import no app.
"""
