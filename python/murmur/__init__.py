"""murmur: decentralized, straggler-tolerant gossip training of your own model.

    peer = murmur.Peer(flat_float32_array, epochs=3, epoch_samples=60000, seeds="host:7070",
                       plaintext=True)
    while (turn := peer.next()).step:     # blocks while joining, held by soft sync, finishing
        ...one local step on the array...
        peer.done(loss, batch_rows)       # the gossip round (mixes into the array)
    result = peer.finish()

murmur.torch.GossipOptimizer wraps any torch.optim optimizer the same way; `python -m murmur.run
--nodes 4 train.py` starts 4 processes of a program on one machine. A bad argument raises
ValueError, anything else murmur.Error, each with murmur's reason in Python's words (keys as
keyword names).
"""

from murmur._murmur import Error, Progress, Turn, __version__, known_keys
from murmur._peer import Peer, binary, config_text

__all__ = ["Error", "Peer", "Progress", "Turn", "__version__", "binary", "config_text",
           "known_keys"]
