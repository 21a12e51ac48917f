"""Typed errors: every bad input surfaces as one of these, with a one-line message a user can act on."""


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
