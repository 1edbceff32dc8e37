/* auditor._logscan: the compiled tokenizer for gateway text log lines.
 *
 * scan(block, base_line, base_off, ...) cuts a block of complete lines ('\n'-terminated) and
 * tokenizes every line of the common shapes in one pass (an optional Docker RFC3339
 * prefix, an optional Go `log` prefix, `request=<id> stage=<id>` or a raw event name, then ` key=value` pairs
 * whose values are bare, or quoted using only the escapes that mean the same in Go and
 * JSON), restricted further to ASCII lines with timestamps that need no special care (a
 * valid calendar date after 1970, no leap second) and no escape in a value that becomes a
 * column (escrow, nonce, host, request). For them it writes the columns of
 * gatewaylog_parse's event table as Arrow buffers (see the dict below), with the same
 * values as the reference parser (gatewaylog_parse.parse_line): `fields` is the JSON object of the pairs (a quoted value's
 * text is copied as it is: its escapes are JSON's), timestamps are microseconds since the
 * epoch in UTC (fractions truncated), the Docker prefix wins over the Go prefix. Every
 * other line (empty, JSON, slog text, other escapes, free text, non-ASCII, odd dates) is
 * copied to `rest` with its line number and byte offset, for the Python parsers. It never
 * rejects a line itself.
 *
 * The GIL is released while a block is scanned, so parse workers run in parallel.
 *
 * scan(block, base_line, base_off, src_docker, src_go) returns a dict of named buffers
 * (src_docker, src_go: the codes gatewaylog_parse.TS_SOURCE_CODES gives those timestamp sources):
 *   rows           number of lines tokenized (n)
 *   line_no        int64[n]              byte_offset  int64[n]
 *   ts             int64[n] (us, UTC)    ts_valid     validity bitmap of ts and src
 *   src            int8[n] (src_docker or src_go)
 *   is_stage       bitmap (Arrow boolean data)
 *   escrow, escrow_valid   int64[n], validity    (the first escrow= pair, a decimal integer)
 *   nonce, nonce_valid     int64[n], validity
 *   name_views, name_data, name_valid          Arrow string views (16 bytes each), the data
 *                                              of the values longer than 12 bytes, validity
 *   request_views, request_data, request_valid
 *   host_views, host_data, host_valid          (the first host= pair)
 *   fields_views, fields_data                  (never null)
 *   rest           bytes: the other lines, each with its '\n'
 *   rest_line_no   int64[m]              rest_byte_offset  int64[m]
 *
 * An escrow= or nonce= value is taken when it is empty (null) or a decimal integer that
 * fits in 64 bits (what DuckDB's TRY_CAST reads alike); a line with any other such value
 * goes to `rest`, whose parsers cast it with TRY_CAST.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An output buffer: a bytes object allocated at its largest possible size, written
 * without checks, and cut to its length at the end (realloc: no copy). Built with
 * -DLOGSCAN_BOUNDS (the fuzz target, tests/fuzz), every write is checked against the size
 * allocated: one byte past it would land in the bytes object's terminator, which
 * AddressSanitizer cannot see. */
typedef struct {
    PyObject *obj;
    char *p;
    size_t len, cap;
} buf_t;

#ifdef LOGSCAN_BOUNDS
#include <stdio.h>
#define CHECK_FITS(b, end)                                                                        \
    do {                                                                                          \
        if ((size_t)(end) > (b)->cap) {                                                           \
            fprintf(stderr, "_logscan: write to byte %zu of a %zu-byte buffer\n", (size_t)(end),   \
                    (b)->cap);                                                                    \
            abort();                                                                              \
        }                                                                                         \
    } while (0)
#else
#define CHECK_FITS(b, end) ((void)0)
#endif

static int buf_new(buf_t *b, size_t cap, int zeroed)
{
    b->obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (!b->obj)
        return -1;
    b->p = PyBytes_AS_STRING(b->obj);
    b->len = 0;
    b->cap = cap;
    if (zeroed) {
        memset(b->p, 0, cap);
        b->len = cap;
    }
    return 0;
}

static inline void put(buf_t *b, const void *src, size_t n)
{
    CHECK_FITS(b, b->len + n);
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void put_i64(buf_t *b, int64_t v) { put(b, &v, 8); }
static inline void set_bit(buf_t *bm, size_t i)
{
    CHECK_FITS(bm, (i >> 3) + 1);
    ((uint8_t *)bm->p)[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* The buffers, named in the returned dict by buf_names. An integer column is values
 * and validity; a string column is three buffers: Arrow string views, the data of the
 * values longer than 12 bytes (the shorter ones are in their view), validity (fields: two,
 * it is never null). */
enum {
    B_LINE, B_OFF, B_TS, B_TS_VALID, B_SRC, B_STAGE, B_ESCROW, B_ESCROW_VALID, B_NONCE, B_NONCE_VALID,
    B_NAME, B_REQUEST = B_NAME + 3, B_HOST = B_REQUEST + 3,
    B_FIELDS = B_HOST + 3, B_REST = B_FIELDS + 2, B_REST_LINE, B_REST_OFF, NBUF
};

static const char *const buf_names[NBUF] = {
    "line_no", "byte_offset", "ts", "ts_valid", "src", "is_stage", "escrow", "escrow_valid", "nonce", "nonce_valid",
    "name_views", "name_data", "name_valid", "request_views", "request_data", "request_valid",
    "host_views", "host_data", "host_valid", "fields_views", "fields_data",
    "rest", "rest_line_no", "rest_byte_offset",
};

typedef struct {
    size_t rows;
    int8_t src_docker, src_go;
    buf_t b[NBUF];
} out_t;

/* the view of the n bytes at p, whose copy (when n > 12) starts at `at` in data buffer 0 */
static inline void put_view(buf_t *views, const unsigned char *p, size_t n, size_t at)
{
    char v[16] = {0};
    int32_t len = (int32_t)n, buf_index = 0, off = (int32_t)at;
    memcpy(v, &len, 4);
    if (n <= 12) {
        memcpy(v + 4, p, n);
    } else {
        memcpy(v + 4, p, 4);
        memcpy(v + 8, &buf_index, 4);
        memcpy(v + 12, &off, 4);
    }
    put(views, v, 16);
}

/* append one value of the string column at c (p == NULL: null) as row i */
static inline void view_col_put(out_t *o, int c, size_t i, const unsigned char *p, size_t n)
{
    buf_t *data = &o->b[c + 1];
    if (!p) {                   /* (never pass NULL to memcpy: the compiler may assume p != NULL) */
        static const char null_view[16] = {0};
        put(&o->b[c], null_view, 16);
        return;
    }
    put_view(&o->b[c], p, n, data->len);
    if (n > 12)
        put(data, p, n);
    set_bit(&o->b[c + 2], i);
}

/* ---- character classes (one table lookup each) ------------------------------------ */
enum { C_DIGIT = 1, C_IDC = 2, C_BARE = 4, C_KEY0 = 8, C_KEY = 16, C_LOWER_DIGIT = 32, C_QUOTED = 64, C_HEX = 128 };
static unsigned char cls[256];

static void init_classes(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned char f = 0;
        int digit = c >= '0' && c <= '9', lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
        if (digit)
            f |= C_DIGIT | C_KEY | C_LOWER_DIGIT;
        if (lower)
            f |= C_LOWER_DIGIT;
        if (lower || upper || c == '_')
            f |= C_KEY0 | C_KEY;
        if (c >= 0x21 && c <= 0x7e && c != '"' && c != '\\')
            f |= C_IDC;             /* _IDC: printable ASCII without space, '"' and '\\' */
        if (c >= 0x20 && c <= 0x7f && c != '"' && c != '\\')
            f |= c == ' ' ? C_QUOTED : C_QUOTED | C_BARE;   /* MED_PAIR value bytes, ASCII only here */
        if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
            f |= C_HEX;
        cls[c] = f;
    }
}

#define IS(c, k) (cls[(unsigned char)(c)] & (k))
static inline int is_digit(unsigned char c) { return IS(c, C_DIGIT); }

static int digits(const unsigned char *s, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil) */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dim[m - 1];
}

/* "YYYY?MM?DD?HH:MM:SS[.f{1,9}]" at s (sep1 between date parts, sep2 before the time):
 * the microseconds since the epoch (local), the length read in *len. 0 ok, -1 not ours. */
static int read_datetime(const unsigned char *s, size_t n, char sep1, char sep2, int64_t *us, size_t *len)
{
    if (n < 19 || s[4] != sep1 || s[7] != sep1 || s[10] != sep2 || s[13] != ':' || s[16] != ':')
        return -1;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y <= 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 59)
        return -1;
    if (d > days_in_month(y, mo))
        return -1;
    size_t i = 19;
    int64_t frac = 0;
    if (i < n && s[i] == '.') {
        size_t k = 0;
        i++;
        while (i < n && is_digit(s[i]) && k < 10) {
            if (k < 6)
                frac = frac * 10 + (s[i] - '0');
            i++;
            k++;
        }
        if (k == 0 || k > 9)
            return -1;
        for (; k < 6; k++)
            frac *= 10;
    }
    *us = ((days_from_civil(y, mo, d) * 86400) + h * 3600 + mi * 60 + se) * 1000000LL + frac;
    *len = i;
    return 0;
}

/* The Docker prefix: RFC3339 with Z or +hh:mm, then a space. */
static int read_docker(const unsigned char *s, size_t n, int64_t *us, size_t *len)
{
    size_t i;
    if (read_datetime(s, n, '-', 'T', us, &i))
        return -1;
    if (i < n && s[i] == 'Z') {
        i++;
    } else if (i + 6 <= n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return -1;
        int64_t off = (oh * 3600LL + om * 60LL) * 1000000LL;
        *us += s[i] == '+' ? -off : off;
        i += 6;
    } else {
        return -1;
    }
    if (i >= n || s[i] != ' ')
        return -1;
    *len = i + 1;
    return 0;
}

static int read_go(const unsigned char *s, size_t n, int64_t *us, size_t *len)
{
    size_t i;
    if (read_datetime(s, n, '/', ' ', us, &i) || i >= n || s[i] != ' ')
        return -1;
    *len = i + 1;
    return 0;
}

/* an _ID run from i: its end (first byte that is not _IDC), or -1 when that byte is
 * neither a space nor the end of the line, or the run is empty */
static long id_end(const unsigned char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && IS(s[j], C_IDC))
        j++;
    if (j == i || (j < n && s[j] != ' '))
        return -1;
    return (long)j;
}

typedef struct {
    const unsigned char *p;
    size_t n;
} span_t;

/* the length of the escape at s (s[0] is a backslash) when it is one of _JSON_ESC: a
 * backslash before a quote, a backslash, b, f, n, r or t, or before u and four hex digits
 * that do not name a surrogate; else 0 */
static size_t json_escape(const unsigned char *s, size_t n)
{
    if (n < 2)
        return 0;
    switch (s[1]) {
    case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
        return 2;
    case 'u':
        if (n < 6 || !IS(s[2], C_HEX) || !IS(s[3], C_HEX) || !IS(s[4], C_HEX) || !IS(s[5], C_HEX))
            return 0;
        if ((s[2] == 'd' || s[2] == 'D') && !(s[3] >= '0' && s[3] <= '7'))
            return 0;
        return 6;
    default:
        return 0;
    }
}

/* a decimal integer that fits in int64: 1 (*v set); empty: 0; anything else: -1 */
static int decimal(span_t s, int64_t *v)
{
    if (!s.p || s.n == 0)
        return 0;
    size_t i = s.p[0] == '-';
    if (i == s.n)
        return -1;
    uint64_t acc = 0, limit = i ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < s.n; i++) {
        if (!is_digit(s.p[i]))
            return -1;
        unsigned d = s.p[i] - '0';
        if (acc > (limit - d) / 10)
            return -1;
        acc = acc * 10 + d;
    }
    *v = s.p[0] == '-' ? (int64_t)(0 - acc) : (int64_t)acc;
    return 1;
}

static int lifted_key(span_t k)
{
    return (k.n == 6 && memcmp(k.p, "escrow", 6) == 0) || (k.n == 5 && memcmp(k.p, "nonce", 5) == 0)
           || (k.n == 4 && memcmp(k.p, "host", 4) == 0) || (k.n == 7 && memcmp(k.p, "request", 7) == 0);
}

#define MAX_PAIRS 64    /* a line with more pairs is left to the Python parsers */

/* Tokenize one line (without its newline) into row o->rows: 0, or -1 when it is not ours. */
static int line(out_t *o, const unsigned char *s, size_t n, int64_t line_no, int64_t off)
{
    size_t i = 0;
    int64_t dts = 0, gts = 0;
    int has_d = 0, has_g = 0;
    size_t k;

    /* every byte of a line taken is checked against a class that admits ASCII only */
    if (n >= 5 && is_digit(s[0]) && s[4] == '-') {
        if (read_docker(s, n, &dts, &k))
            return -1;
        has_d = 1;
        i = k;
    }
    if (i + 5 <= n && is_digit(s[i]) && s[i + 4] == '/') {
        if (read_go(s + i, n - i, &gts, &k))
            return -1;
        has_g = 1;
        i += k;
    }
    const unsigned char *b = s + i;
    size_t bn = n - i, p;
    span_t req = {NULL, 0}, name;
    int stage;
    if (bn >= 8 && memcmp(b, "request=", 8) == 0) {
        long e = id_end(b, bn, 8);
        if (e < 0 || (size_t)e + 7 > bn || memcmp(b + e, " stage=", 7) != 0)
            return -1;
        req.p = b + 8;
        req.n = (size_t)e - 8;
        long e2 = id_end(b, bn, (size_t)e + 7);
        if (e2 < 0)
            return -1;
        name.p = b + e + 7;
        name.n = (size_t)(e2 - e - 7);
        p = (size_t)e2;
        stage = 1;
    } else if (bn >= 6 && memcmp(b, "stage=", 6) == 0) {
        long e = id_end(b, bn, 6);
        if (e < 0)
            return -1;
        name.p = b + 6;
        name.n = (size_t)e - 6;
        p = (size_t)e;
        stage = 1;
    } else {
        /* [a-z][a-z0-9]*(?:_[a-z0-9]+)+ then a space or the end */
        if (bn == 0 || !(b[0] >= 'a' && b[0] <= 'z'))
            return -1;
        size_t j = 1;
        int parts = 0;
        while (j < bn && IS(b[j], C_LOWER_DIGIT))
            j++;
        while (j < bn && b[j] == '_') {
            size_t q = j + 1;
            while (q < bn && IS(b[q], C_LOWER_DIGIT))
                q++;
            if (q == j + 1)
                return -1;
            parts++;
            j = q;
        }
        if (!parts || (j < bn && b[j] != ' '))
            return -1;
        name.p = b;
        name.n = j;
        p = j;
        stage = 0;
    }

    /* the pairs: ( key=value)* to the end, checked and remembered */
    span_t keys[MAX_PAIRS], vals[MAX_PAIRS];
    int np = 0;
    span_t esc = {NULL, 0}, non = {NULL, 0}, hst = {NULL, 0}, freq = {NULL, 0};
    while (p < bn) {
        if (np == MAX_PAIRS || b[p] != ' ' || p + 1 >= bn || !IS(b[p + 1], C_KEY0))
            return -1;
        size_t ks = ++p;
        while (p < bn && IS(b[p], C_KEY))
            p++;
        size_t kn = p - ks;
        if (p >= bn || b[p] != '=')
            return -1;
        p++;
        size_t vs, vn;
        int escaped = 0;
        if (p < bn && b[p] == '"') {
            vs = ++p;
            while ((p < bn && IS(b[p], C_QUOTED)) || (p + 1 < bn && b[p] == '\\')) {
                if (b[p] == '\\') {           /* only the escapes that mean the same in Go and JSON */
                    size_t e = json_escape(b + p, bn - p);
                    if (!e)
                        return -1;
                    p += e;
                    escaped = 1;
                } else {
                    p++;
                }
            }
            if (p >= bn || b[p] != '"')
                return -1;
            vn = p - vs;
            p++;
        } else {
            vs = p;
            while (p < bn && IS(b[p], C_BARE))
                p++;
            vn = p - vs;
        }
        if (p < bn && b[p] != ' ')
            return -1;
        span_t k = {b + ks, kn}, v = {b + vs, vn};
        keys[np] = k;
        vals[np++] = v;
        if (escaped && lifted_key(k))
            return -1;                          /* its column would need the value unescaped */
        if (kn == 6 && !esc.p && memcmp(k.p, "escrow", 6) == 0)
            esc = v;
        else if (kn == 5 && !non.p && memcmp(k.p, "nonce", 5) == 0)
            non = v;
        else if (kn == 4 && !hst.p && memcmp(k.p, "host", 4) == 0)
            hst = v;
        else if (kn == 7 && !freq.p && memcmp(k.p, "request", 7) == 0)
            freq = v;
    }

    int64_t escrow = 0, nonce = 0;
    int has_escrow = decimal(esc, &escrow), has_nonce = decimal(non, &nonce);
    if (has_escrow < 0 || has_nonce < 0)
        return -1;

    /* the row (the buffers were sized for the whole block by out_init) */
    size_t r = o->rows;
    buf_t *B = o->b;
    put_i64(&B[B_ESCROW], escrow);
    put_i64(&B[B_NONCE], nonce);
    if (has_escrow)
        set_bit(&B[B_ESCROW_VALID], r);
    if (has_nonce)
        set_bit(&B[B_NONCE_VALID], r);
    put_i64(&B[B_LINE], line_no);
    put_i64(&B[B_OFF], off);
    put_i64(&B[B_TS], has_d ? dts : gts);
    int8_t src = has_d ? o->src_docker : has_g ? o->src_go : 0;
    put(&B[B_SRC], &src, 1);
    if (has_d || has_g)
        set_bit(&B[B_TS_VALID], r);
    if (stage)
        set_bit(&B[B_STAGE], r);
    view_col_put(o, B_NAME, r, name.p, name.n);
    if (req.p)
        view_col_put(o, B_REQUEST, r, req.p, req.n);
    else
        view_col_put(o, B_REQUEST, r, freq.p, freq.n);
    view_col_put(o, B_HOST, r, hst.p, hst.n);

    /* fields: {"k":"v",...}, a quoted value's text as it is; written to the data buffer,
       then taken back into its view when it is short */
    buf_t *f = &B[B_FIELDS + 1];
    size_t at = f->len;
    char *w = f->p + at;
    *w++ = '{';
    for (int j = 0; j < np; j++) {
        if (j)
            *w++ = ',';
        *w++ = '"';
        memcpy(w, keys[j].p, keys[j].n);
        w += keys[j].n;
        memcpy(w, "\":\"", 3);
        w += 3;
        memcpy(w, vals[j].p, vals[j].n);
        w += vals[j].n;
        *w++ = '"';
    }
    *w++ = '}';
    size_t fn = (size_t)(w - (f->p + at));
    CHECK_FITS(f, at + fn);
    put_view(&B[B_FIELDS], (const unsigned char *)f->p + at, fn, at);
    f->len = fn > 12 ? at + fn : at;
    o->rows++;
    return 0;
}

static void out_free(out_t *o)
{
    for (int i = 0; i < NBUF; i++)
        Py_CLEAR(o->b[i].obj);
}

/* every buffer at its largest size for a block of block_len bytes and at most max_rows
 * lines, so that rows are written without checks */
static int out_init(out_t *o, size_t max_rows, size_t block_len)
{
    memset(o, 0, sizeof *o);
    size_t bitmap = max_rows / 8 + 1, i64 = 8 * max_rows, views = 16 * max_rows;
    int err = buf_new(&o->b[B_LINE], i64, 0) || buf_new(&o->b[B_OFF], i64, 0) || buf_new(&o->b[B_TS], i64, 0)
              || buf_new(&o->b[B_ESCROW], i64, 0) || buf_new(&o->b[B_ESCROW_VALID], bitmap, 1)
              || buf_new(&o->b[B_NONCE], i64, 0) || buf_new(&o->b[B_NONCE_VALID], bitmap, 1)
              || buf_new(&o->b[B_TS_VALID], bitmap, 1) || buf_new(&o->b[B_SRC], max_rows, 0)
              || buf_new(&o->b[B_STAGE], bitmap, 1)
              /* fields write at most 3 bytes per byte of a line's pairs, plus "{}" */
              || buf_new(&o->b[B_FIELDS], views, 0) || buf_new(&o->b[B_FIELDS + 1], 3 * block_len + 2 * max_rows, 0)
              /* a last line without its newline gets one: one byte more than the block */
              || buf_new(&o->b[B_REST], block_len + 1, 0) || buf_new(&o->b[B_REST_LINE], i64, 0)
              || buf_new(&o->b[B_REST_OFF], i64, 0);
    /* a string column's values are parts of distinct lines: at most the block's size */
    for (int c = B_NAME; !err && c < B_FIELDS; c += 3)
        err = buf_new(&o->b[c], views, 0) || buf_new(&o->b[c + 1], block_len, 0) || buf_new(&o->b[c + 2], bitmap, 1);
    return err ? -1 : 0;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer view;
    long long base_line, base_off;
    int src_docker, src_go;
    if (!PyArg_ParseTuple(args, "y*LLii", &view, &base_line, &base_off, &src_docker, &src_go))
        return NULL;
    const unsigned char *s = view.buf;
    size_t n = (size_t)view.len, lines = 0;
    for (const unsigned char *q = s; (q = memchr(q, '\n', (size_t)(s + n - q))) != NULL; q++)
        lines++;
    out_t o;
    if (out_init(&o, lines + 1, n)) {
        out_free(&o);
        PyBuffer_Release(&view);
        return NULL;
    }
    o.src_docker = (int8_t)src_docker;
    o.src_go = (int8_t)src_go;

    Py_BEGIN_ALLOW_THREADS
    buf_t *B = o.b;
    size_t pos = 0;
    int64_t ln = base_line;
    while (pos < n) {
        const unsigned char *nl = memchr(s + pos, '\n', n - pos);
        size_t end = nl ? (size_t)(nl - s) : n;
        if (line(&o, s + pos, end - pos, ln, base_off + (int64_t)pos)) {
            put(&B[B_REST], s + pos, end - pos);
            put(&B[B_REST], "\n", 1);
            put_i64(&B[B_REST_LINE], ln);
            put_i64(&B[B_REST_OFF], base_off + (int64_t)pos);
        }
        pos = end + 1;
        ln++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);

    PyObject *res = PyDict_New(), *rows = res ? PyLong_FromSize_t(o.rows) : NULL;
    int err = !rows || PyDict_SetItemString(res, "rows", rows) < 0;
    Py_XDECREF(rows);
    for (int i = 0; !err && i < NBUF; i++) {
        /* cut each buffer to its length (realloc: no copy); the dict takes a reference */
        if (_PyBytes_Resize(&o.b[i].obj, (Py_ssize_t)o.b[i].len) < 0) {
            o.b[i].obj = NULL;
            err = 1;
        } else {
            err = PyDict_SetItemString(res, buf_names[i], o.b[i].obj) < 0;
        }
    }
    out_free(&o);
    if (err) {
        Py_XDECREF(res);
        return NULL;
    }
    return res;
}
static PyObject *count_lines(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    const unsigned char *s = view.buf, *q = s, *e = s + view.len;
    size_t lines = 0;
    Py_BEGIN_ALLOW_THREADS
    while ((q = memchr(q, '\n', (size_t)(e - q))) != NULL) {
        lines++;
        q++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSize_t(lines);
}

static PyMethodDef methods[] = {
    {"count_lines", count_lines, METH_VARARGS, "count_lines(buffer) -> the number of '\\n' bytes in it."},
    {"scan", scan, METH_VARARGS,
     "scan(block, base_line, base_off, src_docker, src_go) -> dict: tokenize the common text lines "
     "of a block (see the module source for the buffers)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_logscan",
    .m_doc = "Compiled tokenizer for gateway log lines.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__logscan(void)
{
    init_classes();
    return PyModule_Create(&module);
}
