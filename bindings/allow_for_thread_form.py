"""The admin's field for ``spec.interactions.allowForThread`` (issue 33, beyond the spec), kept beside
the Binding form (bindings/forms.py) so that it stays one readable module."""

from __future__ import annotations

from django import forms


class AllowForThreadFields(forms.Form):
    """Mixed into the Binding form: the field, declared once."""

    allow_for_thread = forms.BooleanField(
        label="Allow for this thread",
        required=False,
        help_text="spec.interactions.allowForThread: an approval prompt also offers Allow for this thread; "
        "the tool's later calls in the thread then run without a prompt until the thread expires.",
    )
