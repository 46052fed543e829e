// dnstap (https://dnstap.info): the slow path's queries and replies as Frame Streams of
// protobuf `dnstap.Dnstap` messages, the format Knot, BIND, NSD and Unbound write, through the
// libraries they use (Debian: libfstrm-dev, libprotobuf-c-dev). Only NearcastServer imports this.
//
// A log is a Frame Streams writer (a file, or a Unix socket a collector such as `dnstap` or
// `fstrm_capture` listens on) behind fstrm's I/O thread: `ncdt_log` encodes one message and
// hands it to a lock-free queue, and never waits for the disk or the collector. A full queue
// drops the message and counts it (`ncdt_dropped`).
#ifndef NEARCAST_DNSTAP_LOG_H
#define NEARCAST_DNSTAP_LOG_H

#include <stddef.h>
#include <stdint.h>

struct ncdt_log;

// Opens a log that writes to the file at `path` (created or truncated) or, with `socket` 1, to
// the Unix socket at `path` (reconnected by fstrm's thread when the reader goes away). `identity`
// and `version` (may be NULL or "") go into every message. NULL on failure, with a reason in `why`.
struct ncdt_log *ncdt_open(const char *path, int socket, const char *identity, const char *version, char *why,
			   size_t why_size);

// What is logged (dnstap.Message.Type): a query as it arrived, or a reply as it left.
enum ncdt_kind { NCDT_AUTH_QUERY = 1, NCDT_AUTH_RESPONSE = 2 };

// One message. `client` and `server` are 4 or 16 address bytes (the same length), `tcp` 0 for
// UDP; `message` the DNS message as on the wire; `query_ns`, nanoseconds since the Unix epoch
// when the query arrived, and for a response `response_ns`, when the reply was made.
// Returns 0 when queued, -1 when dropped.
int ncdt_log(struct ncdt_log *log, enum ncdt_kind kind, const uint8_t *client, const uint8_t *server,
	     size_t address_size, uint16_t client_port, uint16_t server_port, int tcp, const uint8_t *message,
	     size_t message_size, uint64_t query_ns, uint64_t response_ns);

// Messages dropped because the queue was full (the writer slower than the queries).
uint64_t ncdt_dropped(const struct ncdt_log *log);

// Flushes what is queued and closes the file or socket.
void ncdt_close(struct ncdt_log *log);

#endif
