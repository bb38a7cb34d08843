package conditions

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	cases := []struct {
		src       string
		templates []string
		depth     int
	}{
		{`{"template_id":"T1"}`, []string{"T1"}, 1},
		{`{"op":"AND","operands":[{"template_id":"A"},{"template_id":"B"}]}`, []string{"A", "B"}, 2},
		{` {"operands":[{"template_id":"A"}], "op":"OR"} `, []string{"A"}, 2},
		{`{"op":"THRESHOLD","k":2,"operands":[{"template_id":"A"},{"template_id":"B"},{"template_id":"A"}]}`, []string{"A", "B"}, 2},
		{`{"op":"OR","operands":[{"op":"AND","operands":[{"template_id":"X"}]},{"template_id":"Y"}]}`, []string{"X", "Y"}, 3},
	}
	for _, c := range cases {
		e, err := Parse([]byte(c.src))
		if err != nil {
			t.Errorf("Parse(%s): %v", c.src, err)
			continue
		}
		if got := e.Templates(); !reflect.DeepEqual(got, c.templates) {
			t.Errorf("Parse(%s).Templates() = %v, want %v", c.src, got, c.templates)
		}
		if e.Depth() != c.depth {
			t.Errorf("Parse(%s).Depth() = %d, want %d", c.src, e.Depth(), c.depth)
		}
	}
}

func TestParseErrorsArePositioned(t *testing.T) {
	deep := strings.Repeat(`{"op":"AND","operands":[`, MaxDepth) + `{"template_id":"T"}` + strings.Repeat(`]}`, MaxDepth)
	many := `{"op":"OR","operands":[` + strings.Repeat(`{"template_id":"T"},`, MaxOperands) + `{"template_id":"U"}]}`
	cases := []struct {
		src    string
		offset int64
		token  string
		why    string
	}{
		{``, 0, "", "unexpected end of input"},
		{`[]`, 0, "[", "an expression is an object"},
		{`{"op":"XOR","operands":[]}`, 6, `"XOR"`, "op must be AND, OR or THRESHOLD"},
		{`{"op":"AND","operands":[]}`, 23, "[", "operands must not be empty"},
		{`{"op":"AND"}`, 0, "{", "AND needs operands"},
		{`{"template_id":"A","op":"AND"}`, 19, `"op"`, "a template leaf has template_id only"},
		{`{"template_id":"A","template_id":"B"}`, 19, `"template_id"`, "appears twice"},
		{`{"template_id":7}`, 15, "7", "template_id must be a string"},
		{`{"template_id":""}`, 15, `""`, "template_id must be 1..64"},
		{`{"when":"now"}`, 1, `"when"`, `unknown member "when"`},
		{`{"op":"THRESHOLD","k":3,"operands":[{"template_id":"A"},{"template_id":"B"}]}`, 22, "3", "k must be in 1..2"},
		{`{"op":"THRESHOLD","k":0,"operands":[{"template_id":"A"}]}`, 22, "0", "k must be in 1..1"},
		{`{"op":"THRESHOLD","k":1.5,"operands":[{"template_id":"A"}]}`, 22, "1.5", "k must be an integer"},
		{`{"op":"THRESHOLD","operands":[{"template_id":"A"}]}`, 0, "{", "THRESHOLD needs k"},
		{`{"op":"AND","k":1,"operands":[{"template_id":"A"}]}`, 12, `"k"`, "k belongs to THRESHOLD only"},
		{`{"template_id":"A"} {}`, 20, "{", "unexpected data after the expression"},
		{`{"template_id":"A"`, 18, "", "unexpected end of input"},
		{`{"template_id" "A"}`, 15, `"A"}`, "invalid JSON"},
		{deep, int64(len(`{"op":"AND","operands":[`)) * MaxDepth, "{", "nests deeper than 8"},
		{many, int64(len(`{"op":"OR","operands":[`) + MaxOperands*len(`{"template_id":"T"},`)), `{"template_id":"`, "more than 16 operands"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want *ParseError", c.src, err)
			continue
		}
		if pe.Offset != c.offset || pe.Token != c.token || !strings.Contains(pe.Why, c.why) {
			t.Errorf("Parse(%q) = offset %d token %q why %q; want offset %d token %q why ~%q", c.src, pe.Offset, pe.Token, pe.Why, c.offset, c.token, c.why)
		}
	}
}

func TestParseTemplateLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"op":"OR","operands":[`)
	inner := func(base int) string {
		var s []string
		for i := range MaxOperands {
			s = append(s, `{"template_id":"T`+string(rune('A'+base))+string(rune('a'+i))+`"}`)
		}
		return `{"op":"OR","operands":[` + strings.Join(s, ",") + `]}`
	}
	b.WriteString(inner(0) + "," + inner(1) + "," + inner(2) + "]}")
	_, err := Parse([]byte(b.String()))
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(pe.Why, "more than 32 templates") {
		t.Fatalf("Parse(48 templates) = %v, want the template limit", err)
	}
}

func TestEvalComposition(t *testing.T) {
	src := `{"op":"OR","operands":[
		{"op":"AND","operands":[{"template_id":"A"},{"template_id":"B"}]},
		{"op":"THRESHOLD","k":2,"operands":[{"template_id":"C"},{"template_id":"D"},{"template_id":"E"}]}]}`
	e, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sat  string
		want bool
	}{
		{"", false}, {"A", false}, {"AB", true}, {"C", false}, {"CE", true}, {"ACD", true}, {"BDE", true}, {"BE", false},
	}
	for _, c := range cases {
		calls := 0
		got, reasons := e.Eval(func(id string) LeafResult {
			calls++
			return LeafResult{Source: SourceAssumed, Satisfied: strings.Contains(c.sat, id)}
		})
		if got != c.want {
			t.Errorf("satisfied %q: %v, want %v", c.sat, got, c.want)
		}
		if calls != 5 {
			t.Errorf("satisfied %q: leaf resolved %d times, want once per template (5)", c.sat, calls)
		}
		if len(reasons) != 8 || reasons[0].Path != "$" || reasons[0].Value != got {
			t.Errorf("satisfied %q: reasons %+v", c.sat, reasons)
		}
		if r := reasons[4]; r.Path != "$.operands[1]" || r.Kind != OpThreshold || r.K != 2 || r.Operands != 3 {
			t.Errorf("satisfied %q: THRESHOLD clause %+v", c.sat, r)
		}
	}
}

func TestSyntaxErrorOffsets(t *testing.T) {
	for _, c := range []struct {
		src    string
		offset int64
	}{{`{"template_id" "A"}`, 15}, {`{"template_id":"A",}`, 19}, {`{"op":"AND","operands":[{"template_id":"A"} {"template_id":"B"}]}`, 44}} {
		_, err := Parse([]byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Offset != c.offset || !strings.HasPrefix(pe.Why, "invalid JSON") {
			t.Errorf("Parse(%s) = %v, want invalid JSON at %d", c.src, err, c.offset)
		}
	}
}
