"""``application/vnd.kubernetes.protobuf`` for the built-in kinds (see :mod:`.codec`)."""

from federation.apiserver.protobuf.codec import (
    MEDIA_TYPE,
    WATCH_MEDIA_TYPE,
    ProtobufError,
    decode,
    encode,
    message_for,
    watch_frame,
)

__all__ = ["MEDIA_TYPE", "WATCH_MEDIA_TYPE", "ProtobufError", "decode", "encode", "message_for", "watch_frame"]
