"""Content negotiation between JSON and protobuf, as kube-apiserver does it.

kubectl's typed client sends ``Accept: application/vnd.kubernetes.protobuf,application/json``:
the first media type the server can produce wins. Protobuf is produced only for the built-in
kinds (:func:`codec.encode` says which); anything else is JSON, which such a client accepts too.
A client that accepts protobuf alone gets 406 for a kind that has no protobuf form.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.apiserver.protobuf.codec import MEDIA_TYPE

_JSON_LIKE = {"application/json", "application/*", "*/*", "application/yaml"}


@dataclass(frozen=True, slots=True)
class Preference:
    protobuf_first: bool
    json_acceptable: bool


def preference(accept: str) -> Preference:
    """Read an Accept header: is protobuf preferred, and may the answer fall back to JSON?"""
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
            elif key.strip() == "as":
                media = ""  # a Table or PartialObjectMetadata view is JSON-only
        if media and quality > 0:
            ranked.append((-quality, index, media.lower()))
    if not ranked:
        return Preference(False, True)
    ranked.sort()
    medias = [media for _, _, media in ranked]
    return Preference(medias[0] == MEDIA_TYPE, any(m in _JSON_LIKE for m in medias))


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == MEDIA_TYPE
