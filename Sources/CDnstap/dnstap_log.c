// See include/dnstap_log.h.
#include "dnstap_log.h"

#include <fstrm.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnstap.pb-c.h"

struct ncdt_log {
	struct fstrm_iothr *iothr;
	struct fstrm_iothr_queue *queue;
	char *identity;
	char *version;
	_Atomic uint64_t dropped;
};

static const char content_type[] = "protobuf:dnstap.Dnstap";

static struct fstrm_writer *make_writer(const char *path, int socket) {
	struct fstrm_writer_options *wopt = fstrm_writer_options_init();
	fstrm_writer_options_add_content_type(wopt, content_type, sizeof content_type - 1);
	struct fstrm_writer *w = NULL;
	if (socket) {
		struct fstrm_unix_writer_options *uopt = fstrm_unix_writer_options_init();
		fstrm_unix_writer_options_set_socket_path(uopt, path);
		w = fstrm_unix_writer_init(uopt, wopt);
		fstrm_unix_writer_options_destroy(&uopt);
	} else {
		struct fstrm_file_options *fopt = fstrm_file_options_init();
		fstrm_file_options_set_file_path(fopt, path);
		w = fstrm_file_writer_init(fopt, wopt);
		fstrm_file_options_destroy(&fopt);
	}
	fstrm_writer_options_destroy(&wopt);
	return w;
}

struct ncdt_log *ncdt_open(const char *path, int socket, const char *identity, const char *version, char *why,
			   size_t why_size) {
	struct fstrm_writer *w = make_writer(path, socket);
	if (w == NULL) {
		snprintf(why, why_size, "cannot make a Frame Streams writer for %s", path);
		return NULL;
	}
	// A file is opened now, so that a path that cannot be written is an error at the start; a
	// socket is connected by the I/O thread, and again whenever its reader goes away.
	if (!socket && fstrm_writer_open(w) != fstrm_res_success) {
		snprintf(why, why_size, "cannot open %s for writing", path);
		fstrm_writer_destroy(&w);
		return NULL;
	}
	struct fstrm_iothr_options *topt = fstrm_iothr_options_init();
	// One queue that every answering thread writes to (UDP threads and event loops alike).
	fstrm_iothr_options_set_queue_model(topt, FSTRM_IOTHR_QUEUE_MODEL_MPSC);
	fstrm_iothr_options_set_num_input_queues(topt, 1);
	fstrm_iothr_options_set_input_queue_size(topt, 1 << 16);
	struct fstrm_iothr *iothr = fstrm_iothr_init(topt, &w);
	fstrm_iothr_options_destroy(&topt);
	if (iothr == NULL) {
		snprintf(why, why_size, "cannot start the Frame Streams I/O thread for %s", path);
		if (w != NULL) fstrm_writer_destroy(&w);
		return NULL;
	}
	struct ncdt_log *log = calloc(1, sizeof *log);
	log->iothr = iothr;
	log->queue = fstrm_iothr_get_input_queue(iothr);
	log->identity = identity && *identity ? strdup(identity) : NULL;
	log->version = version && *version ? strdup(version) : NULL;
	return log;
}

int ncdt_log(struct ncdt_log *log, enum ncdt_kind kind, const uint8_t *client, const uint8_t *server,
	     size_t address_size, uint16_t client_port, uint16_t server_port, int tcp, const uint8_t *message,
	     size_t message_size, uint64_t query_ns, uint64_t response_ns) {
	Dnstap__Message m = DNSTAP__MESSAGE__INIT;
	m.type = kind == NCDT_AUTH_QUERY ? DNSTAP__MESSAGE__TYPE__AUTH_QUERY : DNSTAP__MESSAGE__TYPE__AUTH_RESPONSE;
	m.has_socket_family = 1;
	m.socket_family = address_size == 16 ? DNSTAP__SOCKET_FAMILY__INET6 : DNSTAP__SOCKET_FAMILY__INET;
	m.has_socket_protocol = 1;
	m.socket_protocol = tcp ? DNSTAP__SOCKET_PROTOCOL__TCP : DNSTAP__SOCKET_PROTOCOL__UDP;
	// For both kinds, query_* is the side that sent the query (the client) and response_* the
	// side that answers it (this server), as dnstap.proto says.
	m.has_query_address = m.has_response_address = 1;
	m.query_address.data = (uint8_t *)client;
	m.query_address.len = address_size;
	m.response_address.data = (uint8_t *)server;
	m.response_address.len = address_size;
	m.has_query_port = m.has_response_port = 1;
	m.query_port = client_port;
	m.response_port = server_port;
	m.has_query_time_sec = m.has_query_time_nsec = 1;
	m.query_time_sec = query_ns / 1000000000u;
	m.query_time_nsec = (uint32_t)(query_ns % 1000000000u);
	if (kind == NCDT_AUTH_QUERY) {
		m.has_query_message = 1;
		m.query_message.data = (uint8_t *)message;
		m.query_message.len = message_size;
	} else {
		m.has_response_message = 1;
		m.response_message.data = (uint8_t *)message;
		m.response_message.len = message_size;
		m.has_response_time_sec = m.has_response_time_nsec = 1;
		m.response_time_sec = response_ns / 1000000000u;
		m.response_time_nsec = (uint32_t)(response_ns % 1000000000u);
	}
	Dnstap__Dnstap d = DNSTAP__DNSTAP__INIT;
	d.type = DNSTAP__DNSTAP__TYPE__MESSAGE;
	d.message = &m;
	if (log->identity) {
		d.has_identity = 1;
		d.identity.data = (uint8_t *)log->identity;
		d.identity.len = strlen(log->identity);
	}
	if (log->version) {
		d.has_version = 1;
		d.version.data = (uint8_t *)log->version;
		d.version.len = strlen(log->version);
	}
	size_t size = dnstap__dnstap__get_packed_size(&d);
	uint8_t *frame = malloc(size);
	if (frame == NULL) {
		atomic_fetch_add_explicit(&log->dropped, 1, memory_order_relaxed);
		return -1;
	}
	dnstap__dnstap__pack(&d, frame);
	// The I/O thread frees the frame once written; a full queue hands it back.
	if (fstrm_iothr_submit(log->iothr, log->queue, frame, size, fstrm_free_wrapper, NULL) != fstrm_res_success) {
		free(frame);
		atomic_fetch_add_explicit(&log->dropped, 1, memory_order_relaxed);
		return -1;
	}
	return 0;
}

uint64_t ncdt_dropped(const struct ncdt_log *log) {
	return atomic_load_explicit(&((struct ncdt_log *)log)->dropped, memory_order_relaxed);
}

void ncdt_close(struct ncdt_log *log) {
	if (log == NULL) return;
	fstrm_iothr_destroy(&log->iothr);
	free(log->identity);
	free(log->version);
	free(log);
}
