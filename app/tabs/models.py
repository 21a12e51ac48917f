"""The Models panel (inside Generate & tune): load another verifier / drafter pair for this session."""

from __future__ import annotations

import gradio as gr

from app.guard import reports_errors
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from core import EMBEDDED_ID
from core.models.pairs import PAIR_PRESETS, available_presets

MODEL = {"concurrency_id": "model", "concurrency_limit": 1}


@reports_errors("status")
def _load(verifier: str, drafter: str, session: str) -> dict:
    with PREFETCHER.foreground():
        bundle = SESSIONS.choose(session, verifier, drafter)
    hint = " Choose the drafter 'separate drafter model' under Decoding settings to use it." if bundle.drafter else ""
    return {"status": f"**Models ready:** {SESSIONS.summary(session)}.{hint}"}


class ModelsPanel:
    """Verifier and drafter boxes, a Load button and one status line."""

    def __init__(self) -> None:
        with gr.Accordion("Models", open=False, elem_id="viasd-models"):
            gr.Markdown("The embedded SmolLM2-135M-Instruct works offline. Any Llama, Qwen2/3, Mistral, Gemma or "
                        "Phi-3 causal LM by Hub id or local folder works where it can be fetched; a drafter must "
                        "share the verifier's tokenizer.")
            with gr.Row():
                self.verifier = gr.Textbox(EMBEDDED_ID, label="Verifier", elem_id="viasd-verifier")
                self.drafter = gr.Textbox("", label="Drafter model (optional)",
                                          placeholder="e.g. a smaller model of the same family",
                                          elem_id="viasd-drafter-model")
            with gr.Row():
                self.preset = gr.Dropdown([p.label for p in PAIR_PRESETS], value=None, elem_id="viasd-pair-preset",
                                          label="Real same-tokenizer pairs (fills the boxes)", scale=3)
                self.check = gr.Button("Can they load here?", elem_id="viasd-pair-check", scale=1)
            self.pairs = gr.Markdown("", elem_id="viasd-pairs")
            self.button = gr.Button("Load models", elem_id="viasd-load-models")
            self.status = gr.Markdown("Using the embedded model.", elem_id="viasd-models-status")

    def load(self, verifier: str, drafter: str, request: gr.Request = None) -> str:
        """Switch this browser session to another verifier / drafter pair (Hub ids or local folders)."""
        session = session_id(request)
        result = _load(verifier, drafter, session)
        if result["status"].startswith("⚠"):
            result["status"] += f" — still using {SESSIONS.summary(session)}"
        return result["status"]

    @staticmethod
    def fill(label: str | None) -> tuple:
        """A preset's ids into the boxes (loading is still the Load button's job)."""
        for preset in PAIR_PRESETS:
            if preset.label == label:
                return preset.verifier, preset.drafter
        return gr.skip(), gr.skip()

    @staticmethod
    def availability() -> str:
        """Each real pair, its download size, and whether it can be loaded here (offline: why not)."""
        rows = ["| pair | download | here |", "|---|---|---|"]
        for preset, found in available_presets():
            rows.append(f"| {preset.label} | about {preset.download_bytes / 1e9:.1f} GB | "
                        f"{'✓ ' if found.available else '✗ '}{found.reason} |")
        return "\n".join(rows)

    def wire(self) -> None:
        self.preset.input(self.fill, self.preset, [self.verifier, self.drafter], api_visibility="private",
                          queue=False)
        self.check.click(self.availability, None, self.pairs, api_name="model_presets")
        self.button.click(self.load, [self.verifier, self.drafter], self.status, api_name="load_models", **MODEL)
