/* jsonsub: checks JSON lines against expected ones.
 *   jsonsub EXPECTED ACTUAL
 * Both files hold one JSON object per line.  Line i of ACTUAL must carry
 * every key of line i of EXPECTED with an equal value (integers exactly,
 * numbers with a fraction as doubles); more keys are allowed.  Both files
 * must have the same number of lines.  Differences are listed on stderr. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int equal(json_t *a, json_t *b)
{
	if (json_is_number(a) && json_is_number(b) && (json_is_real(a) || json_is_real(b)))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

static json_t *load_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return NULL;
	}
	json_t *arr = json_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		json_error_t err;
		lineno++;
		json_t *v = json_loadb(line, (size_t)n, 0, &err);
		if (!v) {
			fprintf(stderr, "%s:%d: %s\n", path, lineno, err.text);
			json_decref(arr);
			arr = NULL;
			break;
		}
		json_array_append_new(arr, v);
	}
	free(line);
	fclose(f);
	return arr;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: jsonsub EXPECTED ACTUAL\n");
		return 64;
	}
	json_t *exp = load_lines(argv[1]), *act = load_lines(argv[2]);
	if (!exp || !act)
		return 65;
	int bad = 0;
	if (json_array_size(exp) != json_array_size(act)) {
		fprintf(stderr, "jsonsub: %zu lines expected, %zu found\n", json_array_size(exp), json_array_size(act));
		bad = 1;
	}
	for (size_t i = 0; i < json_array_size(exp) && i < json_array_size(act); i++) {
		json_t *e = json_array_get(exp, i), *a = json_array_get(act, i);
		const char *key;
		json_t *v;
		json_object_foreach(e, key, v) {
			json_t *got = json_object_get(a, key);
			if (!got || !equal(v, got)) {
				char *ev = json_dumps(v, JSON_ENCODE_ANY), *av = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
				fprintf(stderr, "jsonsub: line %zu: %s: expected %s, found %s\n", i + 1, key, ev, av ? av : "nothing");
				free(ev);
				free(av);
				bad = 1;
			}
		}
	}
	json_decref(exp);
	json_decref(act);
	return bad;
}
