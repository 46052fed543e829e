// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Loads a BPF object through the kernel's verifier (nothing is attached or pinned) and prints,
// per program, the verifier's statistics line: "processed N insns (limit 1000000) ...".
// Built and run by tools/verifier-stats.sh; exit status 1 when a program does not load.
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>

static char log_buf[1 << 20];

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT.bpf.o\n", argv[0]);
		return 2;
	}
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);

	if (!obj) {
		perror(argv[1]);
		return 1;
	}
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		bpf_program__set_log_buf(prog, log_buf, sizeof(log_buf));
		bpf_program__set_log_level(prog, 4); /* statistics */
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
	bpf_object__close(obj);
	return err ? 1 : 0;
}
