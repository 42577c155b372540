// gossip/envelope.h is plain data; this file gives the target a translation unit that checks the
// header compiles on its own.
#include "gossip/envelope.h"
