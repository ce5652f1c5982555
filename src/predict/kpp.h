/*
 * The text language of kscope predict (.kpp files, docs/predict.md "The
 * language"), private to src/predict: the parse-from-memory entry that
 * ks_pred_parse_file, the fuzz target and the tests use, and the syntax
 * tree shared by the three files of the language.
 *
 *   kpp_lex.c    the tokenizer: tokens with line and column
 *   kpp_parse.c  the parser: statements and expressions into flat arrays,
 *                every name resolved to a slot, static checks
 *   kpp.c        the interpreter: walks the tree once, calling the C API
 *                of predict.h; ks_pred_parse_file and ks_kpp_parse
 *
 * The tree is built once and interpreted: a loop body's statements are
 * not read again on each pass, and names are not looked up at run time
 * (each declaration owns a slot, each use names the slot).
 */
#ifndef KS_KPP_H
#define KS_KPP_H

#include <stddef.h>
#include <stdint.h>

#include "kscope/predict.h"

#define KS_KPP_MAX_FILE (16u << 20)  /* bytes of a model file */
#define KS_KPP_MAX_LINE 4096         /* bytes of a line, without its newline */
#define KS_KPP_MAX_DEPTH 64          /* nesting of loops; of expressions */
/* Statements executed, each loop pass and each piece of a split counting
 * one: a wrong loop bound stops with an error instead of running for
 * hours.  A model of KS_PRED_MAX_INSTRUCTIONS instructions stays below. */
#define KS_KPP_MAX_STEPS UINT64_C(1000000000)

/* How ks_kpp_parse builds the model (the arguments of ks_pred_parse_file,
 * and a limit the fuzz target lowers). */
struct ks_kpp_opts {
	const char *chip;          /* replaces the file's chip statement; may be NULL */
	const char *const *keys;   /* n param overrides (the last of a key wins) */
	const char *const *values;
	size_t n;
	unsigned flags;            /* KS_PRED_PARSE_* */
	uint64_t max_steps;        /* 0: KS_KPP_MAX_STEPS */
};

/* Builds the model that text (len bytes, need not end in NUL) describes;
 * name is the file's name in messages and locations.  NULL with err
 * (errsize bytes) holding "NAME:LINE:COLUMN: what is wrong".  The caller
 * frees the model (ks_pred_model_free). */
struct ks_pred_model *ks_kpp_parse(const char *name, const char *text, size_t len,
				   const struct ks_kpp_opts *opts, char *err,
				   size_t errsize);

/* ------------------------------------------------------------------ */
/* The syntax tree (kpp_lex.c, kpp_parse.c, kpp.c only)                */
/* ------------------------------------------------------------------ */

enum kpp_tok {
	KPP_T_EOF, KPP_T_NL, KPP_T_NAME, KPP_T_INT, KPP_T_NUM, KPP_T_STRING,
	KPP_T_LBRACK, KPP_T_RBRACK, KPP_T_LPAREN, KPP_T_RPAREN, KPP_T_LBRACE,
	KPP_T_RBRACE, KPP_T_COMMA, KPP_T_ARROW, KPP_T_DOTDOT, KPP_T_EQ,
	KPP_T_PLUS, KPP_T_MINUS, KPP_T_STAR, KPP_T_SLASH, KPP_T_PERCENT,
};

struct kpp_token {
	enum kpp_tok kind;
	uint32_t off, len;  /* bytes of the text; a STRING's include its quotes */
	uint32_t line, col; /* from 1; the column counts bytes */
	int64_t ival;       /* KPP_T_INT */
	double dval;        /* KPP_T_NUM, and KPP_T_INT's value as a double */
};

/* What a name stands for. */
enum kpp_kind { KPP_VALUE, KPP_TENSOR, KPP_SPLIT };

enum kpp_op {
	KPP_E_CONST, KPP_E_SLOT, KPP_E_NEG, KPP_E_ADD, KPP_E_SUB, KPP_E_MUL,
	KPP_E_DIV, KPP_E_MOD, KPP_E_MIN, KPP_E_MAX, KPP_E_CEIL_DIV,
};

/* One node of an expression; children are indices into kpp_tree.exprs. */
struct kpp_expr {
	uint8_t op;          /* enum kpp_op */
	uint32_t a, b;       /* operands (a only for NEG) */
	int64_t value;       /* CONST: the value; SLOT: the slot */
	uint32_t start, end; /* the expression's text: [start, end) */
	uint32_t at;         /* where an error in it is reported: the operator */
};

/* A tensor operand: a tensor, or a piece xs[i] of a split. */
struct kpp_ref {
	uint32_t slot;
	int32_t index;       /* expression of i, or -1 for a plain tensor */
	uint32_t name;       /* the name's offset in the string pool */
	uint32_t line, col;
};

enum kpp_stmt_kind {
	KPP_S_CHIP, KPP_S_PARAM, KPP_S_LET, KPP_S_TENSOR, KPP_S_SPLIT,
	KPP_S_REGISTER, KPP_S_SCALAR, KPP_S_LOAD, KPP_S_INSTR, KPP_S_FOR,
	KPP_S_SET_FLAG, KPP_S_WAIT_FLAG, KPP_S_CACHE, KPP_S_CORE,
};

struct kpp_stmt {
	uint8_t kind;        /* enum kpp_stmt_kind */
	uint8_t has_override;/* PARAM: a value given from outside */
	uint32_t line, col;  /* the statement's first token */
	uint32_t slot;       /* what PARAM, LET, TENSOR, SPLIT, FOR declare */
	uint32_t name;       /* pool offset: chip, param, tensor, split, instruction;
			      * SET_FLAG/WAIT_FLAG: the source pipe; CORE: the
			      * core, or its type when nin is 1 (AIV[i]) */
	uint32_t e0, e1;     /* expressions: PARAM/LET value, SCALAR count,
			      * SET_FLAG/WAIT_FLAG event, CORE index,
			      * SPLIT axis and parts, FOR bounds */
	uint32_t first, nin, nout; /* refs: inputs then outputs (LOAD: source,
				    * destination; SPLIT: the parent);
				    * TENSOR: nin shape expressions in list[];
				    * REGISTER: nin (size, throughput) pairs
				    * in nums[] */
	uint32_t space, dtype, format; /* TENSOR: pool offsets (format 0: ND) */
	uint32_t pipe, formula;        /* REGISTER: pool offsets (formula 0: table);
					* SET_FLAG/WAIT_FLAG: pipe is the
					* destination pipe */
	uint32_t end;        /* FOR: the statement after the body */
	double ops;          /* REGISTER: operations per element; CACHE: the
			      * hit ratio */
	int64_t value;       /* PARAM: the value given from outside */
};

struct kpp_slot_info {
	uint8_t kind;        /* enum kpp_kind */
	uint32_t name;       /* pool offset */
	uint32_t line, col;  /* where it is declared */
};

struct kpp_tree {
	const char *file;    /* the name in messages */
	const char *text;
	size_t len;
	struct kpp_stmt *stmts;
	uint32_t nstmts;
	struct kpp_expr *exprs;
	uint32_t nexprs;
	struct kpp_ref *refs;
	uint32_t nrefs;
	uint32_t *list;      /* TENSOR shapes: expression indices */
	uint32_t nlist;
	double *nums;        /* REGISTER tables: sizes then throughputs */
	uint32_t nnums;
	struct kpp_slot_info *slots;
	uint32_t nslots;
	char *pool;          /* NUL-terminated strings; offset 0 is "" */
	uint32_t pool_len;
	int32_t chip_stmt;   /* the chip statement, or -1 */
	int32_t first_model_stmt; /* the first statement that builds the model, or -1 */
};

/* The tokenizer's state. */
struct kpp_lexer {
	const char *file, *text;
	size_t len, pos, line_start;
	uint32_t line;
	char *err;
	size_t errsize;
	int started;         /* the first line's length is checked */
	int failed;
};

void kpp_lex_init(struct kpp_lexer *lx, const char *file, const char *text, size_t len,
		  char *err, size_t errsize);
/* The next token into *t; -EINVAL with the message in lx->err on a bad
 * token, an over-long line, or an integer that does not fit in 64 bits. */
int kpp_lex_next(struct kpp_lexer *lx, struct kpp_token *t);
/* What a token is, for messages ("'->'", "the name 'x'", "end of line"):
 * at most size bytes, control bytes escaped. */
void kpp_tok_describe(const struct kpp_lexer *lx, const struct kpp_token *t, char *buf,
		      size_t size);

/* "FILE:LINE:COL: " and the message into err (errsize bytes); returns
 * -EINVAL. */
int kpp_errorf(char *err, size_t errsize, const char *file, uint32_t line, uint32_t col,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* At most size bytes of text[0..n) for a message, in quotes, control and
 * non-ASCII bytes as \xNN, shortened with "..." when long. */
void kpp_quote(const char *text, size_t n, char *buf, size_t size);

/* Parses text into *tree (which the caller frees with kpp_tree_free, also
 * after a failure), resolving names and checking what can be checked
 * without running: unknown names, redeclarations, a name of the wrong
 * kind, the chip statement's place, the limits.  -EINVAL or -ENOMEM with
 * the message in err. */
int kpp_parse(const char *file, const char *text, size_t len, struct kpp_tree *tree,
	      char *err, size_t errsize);
void kpp_tree_free(struct kpp_tree *tree);
/* Line and column of a byte offset of the text. */
void kpp_tree_where(const struct kpp_tree *tree, uint32_t off, uint32_t *line,
		    uint32_t *col);

#endif
