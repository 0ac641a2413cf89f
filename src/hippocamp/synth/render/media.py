"""Media renderers: pictures with EXIF (`hippocamp.synth.render.images`), speech by espeak-ng
(`hippocamp.synth.render.speech`) and narrated slideshow videos by ffmpeg
(`hippocamp.synth.render.video`), each saying where its keyed content landed; re-exported here under
the names they always had. They share the pixel layout of lines (`layout`), the programs they run
(`programs`) and the rule that a key marks one unbroken run (`keys`).
"""

from __future__ import annotations

from hippocamp.synth.render.images import IMAGE_KINDS, render_image
from hippocamp.synth.render.programs import ProgramMissingError
from hippocamp.synth.render.speech import SAMPLE_RATE, render_speech
from hippocamp.synth.render.video import render_video

__all__ = [
    "IMAGE_KINDS",
    "SAMPLE_RATE",
    "ProgramMissingError",
    "render_image",
    "render_speech",
    "render_video",
]
