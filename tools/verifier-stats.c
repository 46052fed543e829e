// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Loads a BPF object through the kernel's verifier (nothing is attached or pinned) and prints,
// per program, the verifier's statistics line: "processed N insns (limit 1000000) ...".
// With LOG, the verifier's whole log (every instruction it walked, level 2) is written there too,
// for tools/verifier-profile.py.
// Built and run by tools/verifier-stats.sh; exit status 1 when a program does not load.
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel takes a log of at most UINT_MAX >> 2 bytes; a whole level-2 log is ~250 MiB. */
#define WHOLE_LOG (1u << 29)

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s OBJECT.bpf.o [LOG]\n", argv[0]);
		return 2;
	}
	const char *log_path = argc == 3 ? argv[2] : NULL;
	size_t log_size = log_path ? WHOLE_LOG : 1 << 20;
	char *log_buf = calloc(1, log_size);

	if (!log_buf) {
		perror("calloc");
		return 1;
	}
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);

	if (!obj) {
		perror(argv[1]);
		return 1;
	}
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		bpf_program__set_log_buf(prog, log_buf, log_size);
		bpf_program__set_log_level(prog, log_path ? 2 | 4 : 4); /* every instruction; statistics */
	}
	int err = bpf_object__load(obj);
	char *stats = strstr(log_buf, "processed ");
	/* The kernel's own clock of the verification (a start waits for it: ARCHITECTURE §15). */
	char *time = strstr(log_buf, "verification time ");
	int time_len = time ? (int)strcspn(time, "\n") : 0;

	bpf_object__for_each_program(prog, obj)
	{
		printf("%s: %s", bpf_program__name(prog), stats ? stats : "(no statistics)\n");
		if (time)
			printf("%s: %.*s\n", bpf_program__name(prog), time_len, time);
	}
	if (log_path) {
		FILE *f = fopen(log_path, "w");

		if (!f || fwrite(log_buf, 1, strlen(log_buf), f) != strlen(log_buf) || fclose(f)) {
			perror(log_path);
			err = 1;
		}
	}
	bpf_object__close(obj);
	free(log_buf);
	return err ? 1 : 0;
}
