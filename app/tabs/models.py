"""The Models panel (inside Generate & tune): load another verifier / drafter pair for this session.

The offline Qwen2.5-Coder pair is the first preset: its size is on screen, its install (download,
verify, join, convert, load) moves a progress bar fed by `core.models.load_bundle`'s progress
callback, and once loaded the Generate tab's widgets take the pair's recommended settings
(`core.config.preset(...)`). A drafter setting (int8 / int4 weights, a restricted head: core.models.drafter_quant)
makes the drafter cheaper; picking a preset sets the one its settings were tuned with. One copy serves every
visitor who picks it (app.session).
"""

from __future__ import annotations

from dataclasses import asdict

import gradio as gr

from app.guard import reports_errors
from app.live_load import STAGE_WORDS
from app.model_thread import MODEL, model_event
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from app.settings import Settings
from core import EMBEDDED_ID
from core.config import preset as settings_preset
from core.models.drafter_quant import DRAFTER_QUANTS
from core.models.loading import default_drafter_quant
from core.models.pairs import PAIR_PRESETS, PairPreset, available_presets
from core.models.wheels import Progress

PROGRESS = gr.Progress()
"""Gradio injects a live progress bar for a parameter whose default is a gr.Progress."""


@reports_errors("status")
def _load(verifier: str, drafter: str, session: str, progress: Progress | None = None,
          drafter_quant: str | None = None) -> dict:
    with PREFETCHER.foreground():
        bundle = SESSIONS.choose(session, verifier, drafter, progress, drafter_quant=drafter_quant)
    return {"status": f"**Models ready:** {SESSIONS.summary(session)}.", "has_drafter": bundle.drafter is not None}


def preset_of(verifier: str, drafter: str) -> PairPreset | None:
    """The pair preset these two boxes name, if any."""
    return next((p for p in PAIR_PRESETS if (p.verifier, p.drafter) == ((verifier or "").strip(),
                                                                         (drafter or "").strip())), None)


def reporter(bar: gr.Progress) -> Progress:
    """core's progress(stage, done, total) as a Gradio progress bar (bytes where a stage counts bytes)."""
    def report(stage: str, done: int, total: int) -> None:
        unit = "bytes" if stage in ("download", "verify", "join") else "tensors" if stage == "load" else "steps"
        bar((done, max(total, 1)), desc=STAGE_WORDS.get(stage, stage), unit=unit)
    return report


class ModelsPanel:
    """Verifier and drafter boxes, a Load button and one status line."""

    def __init__(self, verifier: str = EMBEDDED_ID, drafter: str = "", quant: str | None = None) -> None:
        """`verifier`, `drafter` and `quant` fill the boxes: the models the opening screen names (loaded on its
        first run)."""
        with gr.Accordion("Models", open=False, elem_id="viasd-models"):
            gr.Markdown("The embedded SmolLM2-135M-Instruct works offline. Any Llama, Qwen2/3, Mistral, Gemma or "
                        "Phi-3 causal LM by Hub id or local folder works where it can be fetched; a drafter must "
                        "share the verifier's tokenizer.")
            with gr.Row():
                self.verifier = gr.Textbox(verifier, label="Verifier", elem_id="viasd-verifier")
                self.drafter = gr.Textbox(drafter, label="Drafter model (optional)",
                                          placeholder="e.g. a smaller model of the same family",
                                          elem_id="viasd-drafter-model")
                self.quant = gr.Dropdown([(f"{name}: {words}", name) for name, words in DRAFTER_QUANTS.items()],
                                         value=quant, label="Drafter weights (empty: the pair's recommended)",
                                         info="a cheaper drafter: its drafts are still verified or audited",
                                         elem_id="viasd-drafter-quant")
            with gr.Row():
                self.preset = gr.Dropdown([(p.describe(), p.label) for p in PAIR_PRESETS], value=None,
                                          elem_id="viasd-pair-preset", scale=3,
                                          label="Real same-tokenizer pairs (fills the boxes; the first is offline)")
                self.check = gr.Button("Can they load here?", elem_id="viasd-pair-check", scale=1)
            self.pairs = gr.Markdown("", elem_id="viasd-pairs")
            self.button = gr.Button("Load models", elem_id="viasd-load-models")
            self.status = gr.Markdown("Using the embedded model.", elem_id="viasd-models-status")

    @model_event
    def load(self, verifier: str, drafter: str, quant: str | None = None, prompt: str = "", request: gr.Request = None,
             progress: gr.Progress = PROGRESS) -> dict:
        """Switch this browser session to another verifier / drafter pair (Hub ids, local folders or an offline
        preset; `quant` the drafter's setting, empty for the pair's recommended one); a preset's recommended
        settings then fill the Generate tab (the prompt stays)."""
        session = session_id(request)
        result = _load(verifier, drafter, session, reporter(progress), quant or None)
        if result["status"].startswith("⚠"):
            return {self.status: result["status"] + f" — still using {SESSIONS.summary(session)}"}
        chosen = preset_of(verifier, drafter)
        if chosen is None or not chosen.settings:  # no settings follow: say how to use a drafter model
            hint = (" Choose the drafter 'separate drafter model' under Decoding settings to use it."
                    if result.get("has_drafter") else "")
            return {self.status: result["status"] + hint}
        settings = Settings.of(settings_preset(chosen.settings), prompt=prompt)
        status = result["status"] + f" Its recommended settings (`preset(\"{chosen.settings}\")`) are set below."
        return {self.status: status, **{self._widgets[k]: v for k, v in asdict(settings).items() if k != "prompt"}}

    @staticmethod
    def fill(label: str | None) -> tuple:
        """A preset's ids and drafter setting into the boxes (loading is still the Load button's job)."""
        for preset in PAIR_PRESETS:
            if preset.label == label:
                return preset.verifier, preset.drafter, default_drafter_quant(preset.verifier, preset.drafter)
        return gr.skip(), gr.skip(), gr.skip()

    @staticmethod
    def availability() -> str:
        """Each real pair, its download size, and whether it can be loaded here (offline: why not)."""
        rows = ["| pair | size | here |", "|---|---|---|"]
        for preset, found in available_presets():
            rows.append(f"| {preset.label} | {preset.download_bytes / 1e9:.1f} GB |"
                        f"{'✓ ' if found.available else '✗ '}{found.reason} |")
        return "\n".join(rows)

    def wire(self, widgets: dict[str, gr.components.Component]) -> None:
        """Attach the events; `widgets` are the Generate tab's Settings inputs (a preset's settings land there)."""
        self._widgets = widgets
        self.preset.input(self.fill, self.preset, [self.verifier, self.drafter, self.quant],
                          api_visibility="private", queue=False)
        self.check.click(self.availability, None, self.pairs, api_name="model_presets")
        outputs = [self.status, *(w for name, w in widgets.items() if name != "prompt")]
        self.button.click(self.load, [self.verifier, self.drafter, self.quant, widgets["prompt"]], outputs,
                          api_name="load_models",
                          show_progress="full", **MODEL)
