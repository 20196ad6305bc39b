/* An LD_PRELOAD interposer (tests/emu/testing/preload_probe.c, shaped like usbyte's) meets the
 * program's versioned cudaEventRecord@libcudart.so.13 reference and reaches the emulated runtime
 * through dlvsym, as it will with the real libcudart on a GPU machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

static int child(void)
{
    cudaEvent_t e;
    cudaStream_t s;
    if (cudaEventCreate(&e) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess)
        return 2;
    for (int i = 0; i < 3; i++)
        if (cudaEventRecord(e, s) != cudaSuccess)
            return 3;
    return cudaEventSynchronize(e) == cudaSuccess ? 0 : 4;
}

static void test_interposer_meets_versioned_symbols(void **state)
{
    (void)state;
    char exe[4096], probe[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(probe, sizeof probe, "%s/libemu_preload_probe.so", exe);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        setenv("LD_PRELOAD", probe, 1);
        /* Under SAN builds the probe links the ASan runtime, which is then not first in the
         * initial library list; that order is harmless here (the program links it too). */
        const char *asan = getenv("ASAN_OPTIONS");
        char options[4096];
        snprintf(options, sizeof options, "%s%sverify_asan_link_order=0", asan && *asan ? asan : "", asan && *asan ? ":" : "");
        setenv("ASAN_OPTIONS", options, 1);
        execl("/proc/self/exe", "test_emu_preload", "--child", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[4096];
    size_t len = 0;
    ssize_t r;
    while (len + 1 < sizeof out && (r = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child failed (status %d):\n%s", status, out);
    if (strstr(out, "preload probe: 3 cudaEventRecord calls\n") == NULL)
        fail_msg("the interposer did not see the 3 calls:\n%s", out);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interposer_meets_versioned_symbols),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
