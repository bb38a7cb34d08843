package conditions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Node operators of a condition expression (spec 001 §15.5, 000 §11.2-a).
const (
	OpAnd       = "AND"
	OpOr        = "OR"
	OpThreshold = "THRESHOLD"
	// OpTemplate is the Kind of a leaf ({"template_id": ...}) in a
	// ClauseResult; it is not written in expressions.
	OpTemplate = "TEMPLATE"
)

// Structural limits of an expression (spec 001 §15.5 構造上限: depth,
// operands and referenced templates are bounded so an expression cannot
// be used to exhaust the evaluator).
const (
	MaxDepth       = 8    // nesting of operator nodes; a lone leaf is depth 1
	MaxOperands    = 16   // operands of one AND / OR / THRESHOLD node
	MaxTemplates   = 32   // distinct template ids one expression references
	MaxExprBytes   = 8192 // source size
	MaxTemplateLen = 64   // length of one template_id
)

// Expr is one node of a parsed condition expression: a leaf naming a
// ConditionTemplate, or an AND / OR / THRESHOLD node over operands.
type Expr struct {
	Op         string // OpTemplate, OpAnd, OpOr or OpThreshold
	TemplateID string // leaf only
	K          int    // THRESHOLD only: at least K operands true
	Operands   []*Expr
	Offset     int64 // byte offset of the node's '{' in the source
}

// ParseError is a condition expression that cannot be parsed or breaks a
// structural rule: where (byte Offset into the source), what was there
// (Token, as written, "" at end of input) and Why. The gateway answers it
// as CONDITION_EXPR_INVALID with these three in the details.
type ParseError struct {
	Offset int64
	Token  string
	Why    string
}

func (e *ParseError) Error() string {
	tok := e.Token
	if tok == "" {
		tok = "end of input"
	}
	return fmt.Sprintf("condition_expr: at offset %d (%s): %s", e.Offset, tok, e.Why)
}

// Parse parses and checks a condition expression (JSON):
//
//	expr      = leaf | node
//	leaf      = {"template_id": string}
//	node      = {"op": "AND" | "OR", "operands": [expr, ...]}
//	          | {"op": "THRESHOLD", "k": integer, "operands": [expr, ...]}
//
// Members may come in any order; an unknown or repeated member, a
// member that does not belong to the node's kind, an empty operand list,
// k outside 1..len(operands), or a limit exceeded (MaxDepth, MaxOperands,
// MaxTemplates, MaxExprBytes) is a *ParseError. Nothing follows the root.
func Parse(src []byte) (*Expr, error) {
	if len(src) > MaxExprBytes {
		return nil, &ParseError{Offset: MaxExprBytes, Why: fmt.Sprintf("expression exceeds %d bytes", MaxExprBytes)}
	}
	p := &parser{src: src, dec: json.NewDecoder(bytes.NewReader(src)), templates: map[string]bool{}}
	p.dec.UseNumber()
	root, err := p.expr(1)
	if err != nil {
		return nil, err
	}
	off := p.dec.InputOffset()
	if tok, err := p.dec.Token(); err != io.EOF {
		if err != nil {
			return nil, p.syntax(err, off)
		}
		return nil, &ParseError{Offset: p.start(off), Token: show(tok), Why: "unexpected data after the expression"}
	}
	return root, nil
}

type parser struct {
	src       []byte
	dec       *json.Decoder
	templates map[string]bool
}

// start skips the white space and separators json.Decoder leaves before
// a token, so offsets point at the token itself.
func (p *parser) start(off int64) int64 {
	for off < int64(len(p.src)) {
		switch p.src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

// next reads one token and the offset it starts at.
func (p *parser) next() (json.Token, int64, error) {
	off := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.start(off), p.syntax(err, off)
	}
	return tok, p.start(off), nil
}

func (p *parser) syntax(err error, off int64) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{Offset: int64(len(p.src)), Why: "unexpected end of input"}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		o := se.Offset // the offending byte
		return &ParseError{Offset: o, Token: near(p.src, o), Why: "invalid JSON: " + se.Error()}
	}
	off = p.start(off)
	return &ParseError{Offset: off, Token: near(p.src, off), Why: "invalid JSON: " + err.Error()}
}

// near is the source text at off (up to 16 bytes), for a ParseError.
func near(src []byte, off int64) string {
	if off < 0 || off >= int64(len(src)) {
		return ""
	}
	end := min(off+16, int64(len(src)))
	return strings.ToValidUTF8(string(src[off:end]), "?")
}

// show renders a token as it was written.
func show(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return t.String()
	case string:
		return strconv.Quote(t)
	case nil:
		return "null"
	default:
		return fmt.Sprint(t)
	}
}

func (p *parser) expr(depth int) (*Expr, error) {
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &ParseError{Offset: off, Token: show(tok), Why: `an expression is an object: {"template_id": ...} or {"op": ..., "operands": [...]}`}
	}
	if depth > MaxDepth {
		return nil, &ParseError{Offset: off, Token: "{", Why: fmt.Sprintf("expression nests deeper than %d", MaxDepth)}
	}
	e := &Expr{Offset: off}
	seen := map[string]int64{}
	var kOff int64
	var kTok string
	hasK, hasOperands := false, false
	for {
		tok, koff, err := p.next()
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			break
		}
		key := tok.(string) // json.Decoder yields a string key or '}' here
		if _, dup := seen[key]; dup {
			return nil, &ParseError{Offset: koff, Token: strconv.Quote(key), Why: "member " + key + " appears twice"}
		}
		seen[key] = koff
		switch key {
		case "template_id":
			v, voff, err := p.next()
			if err != nil {
				return nil, err
			}
			s, ok := v.(string)
			switch {
			case !ok:
				return nil, &ParseError{Offset: voff, Token: show(v), Why: "template_id must be a string"}
			case s == "" || len(s) > MaxTemplateLen || strings.TrimSpace(s) != s:
				return nil, &ParseError{Offset: voff, Token: show(v), Why: fmt.Sprintf("template_id must be 1..%d characters without surrounding space", MaxTemplateLen)}
			}
			e.TemplateID = s
			if !p.templates[s] {
				if len(p.templates) == MaxTemplates {
					return nil, &ParseError{Offset: voff, Token: show(v), Why: fmt.Sprintf("expression references more than %d templates", MaxTemplates)}
				}
				p.templates[s] = true
			}
		case "op":
			v, voff, err := p.next()
			if err != nil {
				return nil, err
			}
			s, _ := v.(string)
			if s != OpAnd && s != OpOr && s != OpThreshold {
				return nil, &ParseError{Offset: voff, Token: show(v), Why: "op must be AND, OR or THRESHOLD"}
			}
			e.Op = s
		case "k":
			v, voff, err := p.next()
			if err != nil {
				return nil, err
			}
			n, ok := v.(json.Number)
			k, convErr := strconv.Atoi(string(n))
			if !ok || convErr != nil {
				return nil, &ParseError{Offset: voff, Token: show(v), Why: "k must be an integer"}
			}
			e.K, hasK, kOff, kTok = k, true, voff, show(v)
		case "operands":
			tok, aoff, err := p.next()
			if err != nil {
				return nil, err
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return nil, &ParseError{Offset: aoff, Token: show(tok), Why: "operands must be an array of expressions"}
			}
			for p.dec.More() {
				if len(e.Operands) == MaxOperands {
					off := p.start(p.dec.InputOffset())
					return nil, &ParseError{Offset: off, Token: near(p.src, off), Why: fmt.Sprintf("a node has more than %d operands", MaxOperands)}
				}
				sub, err := p.expr(depth + 1)
				if err != nil {
					return nil, err
				}
				e.Operands = append(e.Operands, sub)
			}
			if _, _, err := p.next(); err != nil { // ']'
				return nil, err
			}
			if len(e.Operands) == 0 {
				return nil, &ParseError{Offset: aoff, Token: "[", Why: "operands must not be empty"}
			}
			hasOperands = true
		default:
			return nil, &ParseError{Offset: koff, Token: strconv.Quote(key), Why: "unknown member " + strconv.Quote(key) + " (want template_id, or op, k and operands)"}
		}
	}
	_, isLeaf := seen["template_id"]
	switch {
	case isLeaf && len(seen) > 1:
		for key, o := range seen {
			if key != "template_id" {
				return nil, &ParseError{Offset: o, Token: strconv.Quote(key), Why: "a template leaf has template_id only"}
			}
		}
	case isLeaf:
		e.Op = OpTemplate
		return e, nil
	case e.Op == "":
		return nil, &ParseError{Offset: off, Token: "{", Why: "an expression needs template_id or op"}
	case !hasOperands:
		return nil, &ParseError{Offset: off, Token: "{", Why: e.Op + " needs operands"}
	case e.Op == OpThreshold && !hasK:
		return nil, &ParseError{Offset: off, Token: "{", Why: "THRESHOLD needs k"}
	case e.Op == OpThreshold && (e.K < 1 || e.K > len(e.Operands)):
		return nil, &ParseError{Offset: kOff, Token: kTok, Why: fmt.Sprintf("k must be in 1..%d (the number of operands)", len(e.Operands))}
	case e.Op != OpThreshold && hasK:
		return nil, &ParseError{Offset: seen["k"], Token: `"k"`, Why: "k belongs to THRESHOLD only"}
	}
	return e, nil
}

// Templates lists the distinct template ids e references, in order of
// first appearance.
func (e *Expr) Templates() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(*Expr)
	walk = func(n *Expr) {
		if n.Op == OpTemplate {
			if !seen[n.TemplateID] {
				seen[n.TemplateID] = true
				out = append(out, n.TemplateID)
			}
			return
		}
		for _, o := range n.Operands {
			walk(o)
		}
	}
	walk(e)
	return out
}

// Depth is the nesting depth of e (a leaf is 1).
func (e *Expr) Depth() int {
	d := 0
	for _, o := range e.Operands {
		d = max(d, o.Depth())
	}
	return d + 1
}

// need is how many operands must be true for the node to be true.
func (e *Expr) need() int {
	switch e.Op {
	case OpAnd:
		return len(e.Operands)
	case OpOr:
		return 1
	}
	return e.K
}

// ClauseResult is the value of one node of an expression in one
// evaluation: Path names the node ("$", "$.operands[1]", ...), Kind is
// its op (TEMPLATE for a leaf), Value what it decided and Why in words.
// A leaf carries how it was resolved (Leaf).
type ClauseResult struct {
	Path       string      `json:"path"`
	Kind       string      `json:"kind"`
	TemplateID string      `json:"template_id,omitempty"`
	K          int         `json:"k,omitempty"`
	TrueCount  int         `json:"true_count,omitempty"`
	Operands   int         `json:"operands,omitempty"`
	Value      bool        `json:"value"`
	Why        string      `json:"why"`
	Leaf       *LeafResult `json:"leaf,omitempty"`
}

// LeafResult is how a template leaf was resolved. Source is ASSUMED (a
// dry-run's hypothetical set), ATTESTATION, LEDGER_PREDICATE or
// NOT_WHITELISTED.
type LeafResult struct {
	Source      string          `json:"source"`
	Satisfied   bool            `json:"satisfied"`
	Why         string          `json:"why"`
	Quorum      *QuorumResult   `json:"quorum,omitempty"`
	Predicate   *PredicateValue `json:"predicate,omitempty"`
	Equivocated bool            `json:"equivocated,omitempty"`
}

// Eval evaluates e with leaf resolving each template leaf (called once per
// distinct template id, in order of first appearance). It returns the
// root's value and every node's ClauseResult in pre-order. Evaluation is
// pure: the same leaf values give the same result, byte for byte.
func (e *Expr) Eval(leaf func(templateID string) LeafResult) (bool, []ClauseResult) {
	memo := map[string]LeafResult{}
	for _, id := range e.Templates() {
		memo[id] = leaf(id)
	}
	var out []ClauseResult
	var walk func(n *Expr, path string) bool
	walk = func(n *Expr, path string) bool {
		i := len(out)
		out = append(out, ClauseResult{Path: path, Kind: n.Op})
		if n.Op == OpTemplate {
			lr := memo[n.TemplateID]
			out[i].TemplateID, out[i].Value, out[i].Why, out[i].Leaf = n.TemplateID, lr.Satisfied, lr.Why, &lr
			return lr.Satisfied
		}
		trues := 0
		for j, o := range n.Operands {
			if walk(o, fmt.Sprintf("%s.operands[%d]", path, j)) {
				trues++
			}
		}
		need := n.need()
		v := trues >= need
		out[i].TrueCount, out[i].Operands, out[i].Value = trues, len(n.Operands), v
		if n.Op == OpThreshold {
			out[i].K = n.K
		}
		out[i].Why = fmt.Sprintf("%d of %d operands true, %d needed", trues, len(n.Operands), need)
		return v
	}
	v := walk(e, "$")
	return v, out
}
