"""trtexec interoperability: its tuning-cache format and studies <-> caches.

* :mod:`.trtexec_cache`: ``--tuningCacheFile`` JSON Lines, read and written byte for byte;
* :mod:`.nlohmann`: the JSON style trtexec writes (``ordered_json::dump()``);
* :mod:`.study_cache`: export a study as a cache (resumable by ``trtexec --continue``) and import
  a cache as a study.
"""

from __future__ import annotations
