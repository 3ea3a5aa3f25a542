"""Reaction names Slack knows. reactions.add refuses any other name with invalid_name.

Slack's own list has thousands of names; this is the part a chat bot plausibly uses. A workspace's
custom emoji are added per workspace (``SlackFake.add_emoji``). Names are bare: no colons.
"""

from __future__ import annotations

import re

_STANDARD_NAMES = """
    +1 -1 100 alarm_clock arrow_down arrow_left arrow_right arrow_up arrows_counterclockwise
    bangbang bar_chart bell bookmark books brain broken_heart bug bulb calendar chart_with_downwards_trend
    chart_with_upwards_trend checkered_flag clap clipboard clock1 clock2 clock3 construction cry
    exclamation eyes fast_forward fire gear ghost grey_question grinning hammer_and_wrench handshake heart
    heavy_check_mark heavy_exclamation_mark heavy_minus_sign heavy_plus_sign hourglass
    hourglass_flowing_sand hugging_face inbox_tray information_source joy key label large_blue_circle
    large_green_circle large_orange_circle large_yellow_circle link lock mag mag_right memo muscle
    no_bell no_entry no_entry_sign ok ok_hand outbox_tray package page_facing_up paperclip partying_face
    pencil pencil2 pushpin point_down point_left point_right point_up pray question raised_hand
    raised_hands raising_hand recycle red_circle repeat rewind robot_face rocket rotating_light
    scream see_no_evil shrug skull slightly_smiling_face smile smiley sob sparkles speech_balloon
    star star2 stop_sign stopwatch sweat_smile tada thinking_face thumbsdown thumbsup timer_clock
    triangular_flag_on_post unlock warning wave white_check_mark white_circle x zap
    """
STANDARD_EMOJI = frozenset(_STANDARD_NAMES.split())
_SKIN_TONE = re.compile(r"::skin-tone-[2-6]$")


def is_known_emoji(name: str, custom: set[str] | frozenset[str] = frozenset()) -> bool:
    base = _SKIN_TONE.sub("", name)
    return base in STANDARD_EMOJI or base in custom
