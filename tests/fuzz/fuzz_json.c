/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the JSON reader (src/sample/json.c) directly: any bytes as a document. The first
 * byte picks the options (the \ufffd convention of esc_json, a small depth or value
 * limit), the rest is the text. A document that parses is walked whole through every
 * getter, and every member an object lists must be found again by its key; a document that
 * does not parse must say why, at an offset inside the input. */
#include <math.h>

#include "fuzz.h"
#include "sample/json.h"

static size_t walk(const struct json_value *v, unsigned depth)
{
    FZ_CHECK(v != NULL && depth < 600);
    size_t seen = 1;
    enum json_type t = json_type(v);
    FZ_CHECK(json_type_name(t) != NULL);
    bool b;
    double d;
    int64_t i;
    const char *s;
    size_t len;
    FZ_CHECK((json_as_bool(v, &b) == JSON_OK) == (t == JSON_BOOL));
    if (json_as_double(v, &d) == JSON_OK)
        FZ_CHECK(t == JSON_NUMBER && !isnan(d));
    if (json_as_int(v, -10, 10, &i) == JSON_OK)
        FZ_CHECK(t == JSON_NUMBER && i >= -10 && i <= 10);
    if (json_as_string(v, &s, &len) == JSON_OK)
        FZ_CHECK(t == JSON_STRING && s != NULL);
    FZ_CHECK((json_as_array(v) == JSON_OK) == (t == JSON_ARRAY));
    FZ_CHECK((json_as_object(v) == JSON_OK) == (t == JSON_OBJECT));
    size_t n = json_len(v);
    if (t != JSON_ARRAY && t != JSON_OBJECT)
        FZ_CHECK(n == 0);
    for (size_t k = 0; k < n; k++) {
        const struct json_value *c = json_at(v, k);
        FZ_CHECK(c != NULL);
        if (t == JSON_OBJECT) {
            size_t kl;
            const char *key = json_key(c, &kl);
            FZ_CHECK(key != NULL);
            /* A key with a NUL inside cannot be asked for by name. */
            if (memchr(key, '\0', kl) == NULL) {
                char name[256];
                if (kl < sizeof(name)) {
                    memcpy(name, key, kl);
                    name[kl] = '\0';
                    FZ_CHECK(json_get(v, name) != NULL);
                }
            }
        }
        seen += walk(c, depth + 1);
    }
    FZ_CHECK(json_at(v, n) == NULL);
    return seen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 16))
        return 0;
    struct json_opts o = {
        .ufffd_escape_as_byte = data[0] & 1,
        .max_depth = data[0] & 2 ? 4 : 0,
        .max_values = data[0] & 4 ? 16 : 0,
    };
    char *buf = fz_copy(data + 1, size - 1);
    struct json_doc *doc = NULL;
    struct json_error err = { 0 };
    if (json_parse(&doc, buf, size - 1, &o, &err) == 0) {
        const struct json_value *root = json_root(doc);
        size_t n = walk(root, 0);
        if (o.max_values)
            FZ_CHECK(n <= o.max_values);
        json_free(doc);
    } else {
        FZ_CHECK(err.msg[0] != '\0');
        FZ_CHECK(err.offset <= size - 1);
    }
    free(buf);
    return 0;
}
