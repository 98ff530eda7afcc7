"""What the pipeline asks of a stream in a surface's own event format (Responses, Messages)."""

from __future__ import annotations

from abc import abstractmethod

from switchboard.upstream.types import UpstreamStream


class SurfaceStream(UpstreamStream):
    """A stream whose events are not chat chunks. It renders its own failure after the first event,
    and has no `[DONE]`: its last event (`response.completed`) is held back as `end` once the stream
    is over, so that the pipeline sends it only after the call is settled, as it does `[DONE]`."""

    end: bytes = b""

    @abstractmethod
    def error_event(self, error: BaseException) -> bytes:
        """The events that tell the client the stream broke off after it started, sent once the
        call is settled. A stream that relays its provider's own format sends the provider's error
        event as it came (the failure's `provider_event`); one that translates renders its own."""
