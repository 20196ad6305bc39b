/* The data/net/ table reader (usbyte/net_table.h). */
#include "usbyte/net_table.h"
#include "usbyte/open_regular.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One field [s, end) as a finite positive number (spaces around it allowed). */
static bool positive_field(const char *s, const char *end, double *out)
{
    while (s < end && *s == ' ')
        s++;
    while (end > s && end[-1] == ' ')
        end--;
    char buf[64];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *stop;
    errno = 0;
    double v = strtod(buf, &stop);
    if (stop == buf || *stop != '\0' || errno != 0 || !isfinite(v) || !(v > 0))
        return false;
    *out = v;
    return true;
}

static const char *const FIELD_NAMES[] = {"the bytes are", "the time (us) is", "the in-place time (us) is"};

/* One row [p, end): its fields into v, their number into *nf; NULL, or what is wrong (written
 * into why when it needs numbers). */
static const char *parse_row(const char *p, const char *end, double v[3], int *nf, char *why, size_t whylen)
{
    if (memchr(p, '\t', (size_t)(end - p)) == NULL)
        return "expected bytes<TAB>us[<TAB>in_place_us]";
    *nf = 0;
    for (const char *f = p;; f++) {
        const char *tab = memchr(f, '\t', (size_t)(end - f));
        const char *fe = tab ? tab : end;
        if (*nf == 3)
            return "more than three columns";
        if (!positive_field(f, fe, &v[*nf])) {
            snprintf(why, whylen, "%s missing or not a positive number", FIELD_NAMES[*nf]);
            return why;
        }
        (*nf)++;
        if (tab == NULL)
            return NULL;
        f = tab;
    }
}

static int grow(ub_net_table *t, int *cap)
{
    if (t->n < *cap)
        return 0;
    int want = *cap ? 2 * *cap : 32;
    ub_net_row *r = realloc(t->rows, (size_t)want * sizeof *r);
    if (r == NULL)
        return -1;
    t->rows = r;
    *cap = want;
    return 0;
}

int ub_net_table_parse(const char *text, const char *name, ub_net_table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    int cap = 0, line = 0, columns = 0;
    char why[160];
    const char *bad = NULL;
    for (const char *p = text; *p != '\0' && bad == NULL;) {
        const char *eol = strchr(p, '\n');
        if (eol == NULL)
            eol = p + strlen(p);
        const char *next = *eol ? eol + 1 : eol;
        const char *end = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        line++;
        if (end == p || *p == '#') {
            p = next;
            continue;
        }
        double v[3];
        int nf = 0;
        bad = parse_row(p, end, v, &nf, why, sizeof why);
        if (bad == NULL && columns != 0 && nf != columns) {
            snprintf(why, sizeof why, "%d columns where the first row has %d", nf, columns);
            bad = why;
        } else if (bad == NULL && t->n > 0 && !(v[0] > t->rows[t->n - 1].bytes)) {
            snprintf(why, sizeof why, "bytes %.17g not above the previous row's %.17g", v[0], t->rows[t->n - 1].bytes);
            bad = why;
        } else if (bad == NULL && grow(t, &cap) != 0) {
            bad = "out of memory";
        }
        if (bad != NULL)
            break;
        columns = nf;
        t->rows[t->n++] = (ub_net_row){v[0], v[1], nf == 3 ? v[2] : v[1]};
        p = next;
    }
    if (bad != NULL || t->n == 0) {
        if (bad != NULL)
            snprintf(err, errlen, "%s: line %d: %s", name, line, bad);
        else
            snprintf(err, errlen, "%s: no rows (bytes<TAB>us)", name);
        ub_net_table_free(t);
        return -1;
    }
    t->has_in_place = columns == 3;
    return 0;
}

/* The whole regular file `path`, NUL-terminated; NULL with one line in err. */
static char *read_text(const char *path, char *err, size_t errlen)
{
    int fd = ub_open_regular(path, err, errlen);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (buf == NULL) {
        snprintf(err, errlen, "%s: cannot read: out of memory", path);
        return NULL;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n) != NULL) {
        snprintf(err, errlen, "%s: not a text file", path);
        free(buf);
        return NULL;
    }
    return buf;
}

int ub_net_table_read(const char *path, ub_net_table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    char *text = read_text(path, err, errlen);
    if (text == NULL)
        return -1;
    int rc = ub_net_table_parse(text, path, t, err, errlen);
    free(text);
    return rc;
}

void ub_net_table_free(ub_net_table *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}
