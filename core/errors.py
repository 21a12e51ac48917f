"""Typed errors: every bad input surfaces as one of these, with a one-line message a user can act on."""


def shown(value: object, limit: int = 60) -> str:
    """A user-supplied value made safe for a one-line message: control characters escaped, cut to `limit`."""
    text = str(value)
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "…"


class ViaSdError(Exception):
    """Base class for every error this project raises on purpose."""


class ConfigError(ViaSdError, ValueError):
    """A decoding setting is out of range or inconsistent (thresholds, gamma, token caps)."""


class PromptError(ViaSdError, ValueError):
    """The prompt is empty or longer than the limits allow."""


class ModelLoadError(ViaSdError, RuntimeError):
    """A model could not be loaded: unknown id, no network, unsupported architecture, bad file."""


class TokenizerMismatchError(ViaSdError, ValueError):
    """The drafter and the verifier do not share a tokenizer, so their token ids mean different things."""


class RoutingError(ViaSdError, ValueError):
    """A layer route names layers the model does not have, or drops a layer the KV cache relies on."""


class ProfileError(ViaSdError, ValueError):
    """A cost profile is missing, unreadable, or cannot be fitted from the passes measured."""


class ModelPolicyError(ModelLoadError):
    """A model was refused before download: too large for this demo's limits, or not on its allow-list."""
