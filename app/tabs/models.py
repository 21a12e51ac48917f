"""The Models panel (inside Generate & tune): load another verifier / drafter pair for this session."""

from __future__ import annotations

import gradio as gr

from app.guard import reports_errors
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from core import EMBEDDED_ID

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
            self.button = gr.Button("Load models", elem_id="viasd-load-models")
            self.status = gr.Markdown("Using the embedded model.", elem_id="viasd-models-status")

    def load(self, verifier: str, drafter: str, request: gr.Request = None) -> str:
        """Switch this browser session to another verifier / drafter pair (Hub ids or local folders)."""
        session = session_id(request)
        result = _load(verifier, drafter, session)
        if result["status"].startswith("⚠"):
            result["status"] += f" — still using {SESSIONS.summary(session)}"
        return result["status"]

    def wire(self) -> None:
        self.button.click(self.load, [self.verifier, self.drafter], self.status, api_name="load_models", **MODEL)
