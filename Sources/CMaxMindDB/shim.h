// libmaxminddb for Swift (Debian: libmaxminddb-dev). Only the MaxMindDB module imports this
// (ARCHITECTURE §7). MMDB_get_value is variadic, which Swift cannot call: use MMDB_aget_value.
#include <maxminddb.h>
