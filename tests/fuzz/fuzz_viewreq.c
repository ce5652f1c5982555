/*
 * libFuzzer target for kscope view's request parser and handlers
 * (ks_view_request, src/view): the input is one request text, answered on
 * a small view built here once -- a card with a timeline made through
 * kv_tl_* (two processes, nested slices, flows), the JSON blocks of a
 * hot-spot map (0x03, 0x04), basic info (0x05), compute workload (0x06,
 * 0x07), memory graph and table (0x08, 0x09) and a roofline (0x0D) in the
 * shapes of docs/formats.md, a source text, a findings report and a
 * prediction; and a second card with a timeline only -- so that it needs
 * no file.  Nothing may crash, read out of bounds or leak, and every
 * answer must be one JSON object {type:"response", result, body} whose
 * body, when result is false, carries a non-empty message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const block_json[16] = {
	[3] = "{\"Cores\": [\"core0.cubecore0\", \"core0.veccore0\"],"
	      " \"Files Dtype\": {\"Lines\": {\"Address Range\": 0, \"Cycles\": 1,"
	      "  \"Instructions Executed\": 1, \"Line\": 1}},"
	      " \"Files\": [{\"Source\": \"/src/k.cpp\", \"Lines\": ["
	      "  {\"Line\": 2, \"Address Range\": [[\"0x10\", \"0x18\"]],"
	      "   \"Cycles\": [15, 12], \"Instructions Executed\": [15, 9]},"
	      "  {\"Line\": 3, \"Address Range\": [[\"0x18\", \"0x20\"]],"
	      "   \"Cycles\": [1, 0], \"Instructions Executed\": [1, 0]}]}]}",
	[4] = "{\"Cores\": [\"core0.cubecore0\", \"core0.veccore0\"],"
	      " \"Instructions Dtype\": {\"Instructions\": {\"Address\": 3,"
	      "  \"AscendC Inner Code\": 3, \"Cycles\": 1, \"Instructions Executed\": 1,"
	      "  \"Pipe\": 3, \"Source\": 3}},"
	      " \"Instructions\": [{\"Address\": \"0x10\", \"AscendC Inner Code\":"
	      "  \"/src/k.cpp:2\", \"Cycles\": [2, 2], \"Instructions Executed\": [1, 1],"
	      "  \"Pipe\": \"SCALAR\", \"Source\": \"MOV_XD_IMM XD:X29,IMM\"}]}",
	[5] = "{\"name\": \"add_custom\", \"soc\": \"sim\", \"op_type\": \"aiv\","
	      " \"block_dim\": 2, \"mix_block_dim\": 0, \"duration\": 13.16,"
	      " \"block_detail\": [{\"block_id\": 0, \"core_type\": \"aiv\", \"duration\": 6.5},"
	      "  {\"block_id\": 1, \"core_type\": \"aiv\", \"duration\": 6.66}],"
	      " \"mix_block_detail\": [], \"advice\": [\"use more cores\"]}",
	[6] = "{\"subblock_detail\": [{\"block_id\": 0, \"block_type\": \"aiv\","
	      " \"name\": \"vector ratio\", \"unit\": \"%\", \"value\": \"40\","
	      " \"origin_value\": 0.4}], \"advice\": []}",
	[7] = "{\"subblock_detail\": [{\"block_id\": 1, \"block_type\": \"aiv\","
	      " \"name\": \"cycles\", \"unit\": \"\", \"value\": \"100\","
	      " \"origin_value\": 100}], \"advice\": [\"x\"]}",
	[8] = "{\"core_memory_map\": [{\"core_no\": 0, \"op_type\": \"aiv\", \"soc\": \"sim\","
	      " \"memory_unit\": [{\"memory_path\": \"GM->UB\", \"request\": 10,"
	      "  \"request_per_byte\": 0.1, \"bandwidth\": 12.5, \"peak_ratio\": 0.3,"
	      "  \"display\": true}],"
	      " \"L2cache\": {\"hit\": 5, \"miss\": 1, \"total_request\": 6, \"hit_ratio\": 0.83},"
	      " \"Cube\": {\"ratio\": 0, \"cycle\": 0, \"total_cycles\": 10},"
	      " \"Vector\": {\"ratio\": 0.5, \"cycle\": 5, \"total_cycles\": 10},"
	      " \"advice\": []}]}",
	[9] = "{\"table_per_block\": [{\"block_id\": 0, \"table_op_type\": \"aiv\","
	      " \"table_detail\": [{\"table_name\": \"UB\", \"size\": [1, 2],"
	      "  \"header_name\": [\"read\", \"write\"],"
	      "  \"row\": [{\"name\": \"bytes\", \"value\": [\"1\", \"2\"]}]}],"
	      " \"advice\": []}]}",
	[13] = "{\"multiple_rooflines\": [{\"title\": \"Memory Unit\", \"rooflines\": ["
	       " {\"bw\": 1600.0, \"computility\": 256.0, \"computility_name\": \"Vector FP32\","
	       "  \"point\": [0.25, 42.5]}]}]}",
	/* 0x0B as the import keeps it: each record's eight counts. */
	[11] = "[[5, 1, 0, 4, 2, 2, 0, 1], [0, 0, 1, 0, 0, 0, 0, 0]]",
	[14] = "{\"levels\": [\"L1\", \"LL\"], \"line_size\": 64, \"cache_lines\": ["
	       " {\"address\": \"0x40\", \"misses\": [3, 1], \"load_misses\": 2,"
	       "  \"store_misses\": 1, \"writebacks\": 1, \"top_instruction\": {\"address\":"
	       "  \"0x401000\", \"misses\": 2, \"function\": \"f\", \"file\": \"a.c\","
	       "  \"line\": 3, \"source\": \"mov\"}}],"
	       " \"other\": {\"lines\": 0, \"dropped_pairs\": 0, \"misses\": [0, 0],"
	       "  \"load_misses\": 0, \"store_misses\": 0, \"writebacks\": 0}}",
};

static const char source_text[] = "int main(void)\n{\n\treturn 0;\n}\n";

static struct kv_timeline *make_timeline(int variant)
{
	struct kv_timeline *tl = kv_tl_new();
	struct ks_err err;
	static const char args[] = "{\"i\": 1}";

	if (!tl)
		abort();
	kv_tl_process_name(tl, "1", "app", 0);
	kv_tl_thread_name(tl, "1", "2", "main", 0);
	kv_tl_thread_name(tl, "1", "3", "worker", 1);
	for (int i = 0; i < 40; i++) {
		int64_t t = 1000 + i * 100;

		kv_tl_slice(tl, "1", "2", i % 3 ? "step" : "load", "cat", NULL, t, 90,
			    args, sizeof args - 1);
		kv_tl_slice(tl, "1", "2", "inner", NULL, "good", t + 10, 20, NULL, 0);
		if (variant == 0)
			kv_tl_slice(tl, "1", "3", "work", "cat", NULL, t + 50, 40, NULL, 0);
	}
	kv_tl_slice(tl, "4", "4", "other", NULL, NULL, 500, 0, NULL, 0);
	if (variant == 0) {
		kv_tl_flow(tl, "f1", "flow", "send", "1", "2", 1015, "1", "3", 1060);
		kv_tl_flow(tl, "f2", "flow", "send", "1", "2", 2015, "1", "3", 2060);
	}
	if (kv_tl_finish(tl, &err) != 0)
		abort();
	return tl;
}

static char *dup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

/* The view every input is answered on; built once, never freed (the
 * process ends with the fuzzer). */
static struct ks_view *make_view(void)
{
	struct ks_view *v = calloc(1, sizeof *v);
	struct kv_card *c;
	json_error_t jerr;

	if (!v)
		abort();
	v->path = dup("/fuzz/run");
	v->ncards = 2;
	v->cards = calloc(2, sizeof *v->cards);
	if (!v->cards)
		abort();
	c = &v->cards[0];
	c->id = dup("fuzz");
	c->title = dup("fuzz card");
	c->path = dup("/fuzz/run/visualize_data.bin");
	c->command = dup("simulate");
	c->kinds = KV_TIMELINE | KV_SOURCE | KV_DETAILS | KV_ROOFLINE | KV_FINDINGS |
		   KV_PREDICT;
	c->tl = make_timeline(0);
	for (int t = 0; t < 16; t++) {
		if (!block_json[t])
			continue;
		c->block[t] = json_loads(block_json[t], JSON_REJECT_DUPLICATES, &jerr);
		if (!c->block[t])
			abort();
	}
	c->nsources = 1;
	c->sources = calloc(1, sizeof *c->sources);
	if (!c->sources)
		abort();
	c->sources[0].path = dup("/src/k.cpp");
	c->sources[0].text = dup(source_text);
	c->sources[0].len = strlen(source_text);
	c->findings = json_loads("{\"tool\": \"memcheck\", \"findings\": [{\"kind\": "
				 "\"use-after-free\", \"stack\": [{\"function\": \"main\", "
				 "\"file\": \"/src/k.cpp\", \"line\": 3}]}]}", 0, &jerr);
	c->predict = json_loads("{\"pipes\": [{\"Pipe\": \"VECTOR\", \"Time (us)\": 1.5}],"
				" \"instructions\": [{\"Instruction\": \"vadd\", \"Count\": 4}]}",
				0, &jerr);
	if (!c->findings || !c->predict)
		abort();

	c = &v->cards[1];
	c->id = dup("second");
	c->title = dup("second card");
	c->path = dup("/fuzz/run/trace.json");
	c->command = dup("");
	c->kinds = KV_TIMELINE;
	c->tl = make_timeline(1);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ks_view *view;
	json_error_t jerr;
	json_t *r, *body;
	size_t len = 0;
	const char *type;
	char *resp;

	if (!view)
		view = make_view();
	resp = ks_view_request(view, (const char *)data, size, &len);
	if (!resp)
		abort();
	if (strlen(resp) != len)
		abort();
	r = json_loadb(resp, len, 0, &jerr);
	if (!r || !json_is_object(r))
		abort();
	body = json_object_get(r, "body");
	type = json_string_value(json_object_get(r, "type"));
	if (!type || strcmp(type, "response") != 0 ||
	    !json_is_boolean(json_object_get(r, "result")) || !json_is_object(body))
		abort();
	if (json_is_false(json_object_get(r, "result"))) {
		const char *msg = json_string_value(json_object_get(body, "message"));

		if (!msg || !msg[0])
			abort();
	}
	json_decref(r);
	free(resp);
	return 0;
}
