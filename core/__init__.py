"""VIA-SD core: three-tier speculative decoding on Hugging Face causal LMs. No UI imports here."""

from core.analysis.fidelity import attach_fidelity
from core.analysis.metrics import summarize
from core.config import DecodeConfig
from core.decoding.engine import encode_prompt, generate, iter_generate
from core.errors import ConfigError, ModelLoadError, PromptError, RoutingError, TokenizerMismatchError, ViaSdError
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle, load_model
from core.trace import Trace

__all__ = [
    "EMBEDDED_ID", "ConfigError", "DecodeConfig", "ModelBundle", "ModelLoadError", "PromptError", "RoutingError",
    "TokenizerMismatchError", "Trace", "ViaSdError", "attach_fidelity", "encode_prompt", "generate",
    "iter_generate", "load_bundle", "load_model", "summarize",
]
