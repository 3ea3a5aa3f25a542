"""The admin's fields for what a Binding adds to its replies beyond the spec (``spec.feedback``,
``spec.stopBy``), kept beside the Binding form (bindings/forms.py) so that it stays one readable module."""

from __future__ import annotations

from django import forms

from bindings import manifest


class ReplyExtrasFields(forms.Form):
    """Mixed into the Binding form: the fields, declared once."""

    feedback = forms.BooleanField(
        label="Feedback on answers",
        required=False,
        help_text="spec.feedback: an answer's final reply carries thumbs up and down.",
    )
    # A text field shown as a select: a value outside the list is refused by the manifest's validator.
    stop_by = forms.CharField(
        label="Who may stop a turn",
        required=False,
        initial=manifest.StopBy.MEMBERS.value,
        help_text="spec.stopBy: members (anyone in the channel) or requester (only the person who asked).",
        widget=forms.Select(choices=[(choice.value, choice.value) for choice in manifest.StopBy]),
    )
