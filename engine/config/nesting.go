package config

import (
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// MaxNesting is how deeply brackets ((, [, {), quoted strings and template
// interpolations (${ and %{) may nest in a flow file, a variables file, a template or
// a --var value. HCL's parser descends once per level, and a file nested some tens of
// thousands deep exhausts the goroutine stack, a fatal error no recover catches. Flows
// written by people or generated stay far below this.
const MaxNesting = 1000

// Syntax is what a text to check is: a configuration file or expression (HCL native
// syntax, or JSON, which has no comments or heredocs but the same brackets and
// strings), or a template, whose text is literal outside ${ and %{.
type Syntax int

const (
	ConfigSyntax Syntax = iota
	TemplateSyntax
)

// CheckNesting refuses src, named filename, when it nests deeper than MaxNesting,
// before a parser sees it: one error on the opening that crosses the limit. It reads
// comments, quoted strings (with their escapes), heredocs and template
// interpolations as HCL does, closely enough that nothing inside a comment or in a
// string's text counts, and stays linear in the size of src whatever it holds.
func CheckNesting(src []byte, filename string, syntax Syntax) hcl.Diagnostics {
	s := &nestScanner{src: src, pos: hcl.InitialPos}
	if syntax == TemplateSyntax {
		s.stack, s.base = append(s.stack, nest{kind: nestTemplate}), 1
	}
	if s.scan() {
		return nil
	}
	start := s.crossed
	end := start
	end.Byte += s.width
	end.Column += utf8.RuneCount(src[start.Byte : start.Byte+s.width])
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Nesting too deep",
		Detail: fmt.Sprintf("At line %d, column %d, brackets, strings and template interpolations nest more than %d deep; "+
			"flow reads no deeper nesting (it would exhaust the parser's stack). Flatten the value, or build it "+
			"with functions such as concat, merge or flatten.", start.Line, start.Column, MaxNesting),
		Subject: &hcl.Range{Filename: filename, Start: start, End: end},
	}}
}

type nestKind int

const (
	nestBracket  nestKind = iota // ( [ {, closed by any of ) ] }
	nestInterp                   // ${ or %{ in a string or template, closed by }
	nestString                   // "...", in code
	nestHeredoc                  // <<MARKER or <<-MARKER ... MARKER
	nestTemplate                 // a whole template file: never closed
)

type nest struct {
	kind   nestKind
	marker []byte // a heredoc's closing marker
}

type nestScanner struct {
	src   []byte
	i     int
	pos   hcl.Pos // of src[i]
	stack []nest
	base  int // levels of stack that are not nesting: a template's text
	// lineStart is set when src[i] begins a line.
	lineStart bool
	// crossed is where the limit was crossed, width the opening's length in bytes.
	crossed hcl.Pos
	width   int
}

// advance moves past n bytes, keeping pos.
func (s *nestScanner) advance(n int) {
	for end := s.i + n; s.i < end && s.i < len(s.src); {
		r, size := utf8.DecodeRune(s.src[s.i:])
		s.i += size
		s.pos.Byte += size
		if r == '\n' {
			s.pos.Line++
			s.pos.Column = 1
			s.lineStart = true
		} else {
			s.pos.Column++
			s.lineStart = false
		}
	}
}

// push opens a level with the width bytes at the current position, and moves past
// them; false when it crosses MaxNesting.
func (s *nestScanner) push(n nest, width int) bool {
	return s.pushPast(n, width, width)
}

// pushPast is push for an opening of width bytes followed by more that belong to it
// (a heredoc's newline): it moves past past bytes.
func (s *nestScanner) pushPast(n nest, width, past int) bool {
	s.stack = append(s.stack, n)
	if len(s.stack)-s.base > MaxNesting {
		s.crossed, s.width = s.pos, width
		return false
	}
	s.advance(past)
	return true
}

func (s *nestScanner) top() nestKind {
	if len(s.stack) == 0 {
		return nestBracket // the top level of a file is code
	}
	return s.stack[len(s.stack)-1].kind
}

func (s *nestScanner) pop() {
	if len(s.stack) > 0 {
		s.stack = s.stack[:len(s.stack)-1]
	}
}

func (s *nestScanner) has(prefix string) bool {
	return len(s.src)-s.i >= len(prefix) && string(s.src[s.i:s.i+len(prefix)]) == prefix
}

// scan reports whether src stays within MaxNesting.
func (s *nestScanner) scan() bool {
	s.lineStart = true
	for s.i < len(s.src) {
		var ok bool
		switch s.top() {
		case nestString:
			ok = s.inString()
		case nestHeredoc:
			ok = s.inHeredoc()
		case nestTemplate:
			ok = s.inText()
		default:
			ok = s.inCode()
		}
		if !ok {
			return false
		}
	}
	return true
}

// inCode reads one token's worth of code: top level, brackets, interpolations.
func (s *nestScanner) inCode() bool {
	c := s.src[s.i]
	switch {
	case c == '#' || s.has("//"):
		for s.i < len(s.src) && s.src[s.i] != '\n' {
			s.advance(1)
		}
	case s.has("/*"):
		s.advance(2)
		for s.i < len(s.src) && !s.has("*/") {
			s.advance(1)
		}
		s.advance(2)
	case c == '"':
		return s.push(nest{kind: nestString}, 1)
	case c == '(' || c == '[' || c == '{':
		return s.push(nest{kind: nestBracket}, 1)
	case c == ')' || c == ']' || c == '}':
		// An unmatched closing bracket is the parser's to report.
		if len(s.stack) > 0 && s.top() != nestTemplate {
			s.pop()
		}
		s.advance(1)
	case s.has("<<"):
		return s.heredoc()
	default:
		s.advance(1)
	}
	return true
}

// heredoc opens <<MARKER or <<-MARKER followed by a newline; anything else after <<
// is left to the parser.
func (s *nestScanner) heredoc() bool {
	j := s.i + 2
	if j < len(s.src) && s.src[j] == '-' {
		j++
	}
	k := j
	for k < len(s.src) && (isIdentByte(s.src[k]) || k > j && s.src[k] == '-') {
		k++
	}
	nl := k
	if nl < len(s.src) && s.src[nl] == '\r' {
		nl++
	}
	if k == j || nl >= len(s.src) || s.src[nl] != '\n' {
		s.advance(2)
		return true
	}
	return s.pushPast(nest{kind: nestHeredoc, marker: s.src[j:k]}, k-s.i, nl+1-s.i)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// inString reads a quoted string's text: escapes, interpolations, its end. A string
// ends at a newline too: HCL rejects that, and the rest of the file is code again.
func (s *nestScanner) inString() bool {
	switch c := s.src[s.i]; {
	case c == '\\':
		s.advance(2)
	case c == '"' || c == '\n':
		s.pop()
		s.advance(1)
	default:
		return s.inText()
	}
	return true
}

// inHeredoc reads a heredoc's text, ending it at a line that holds only its marker
// (indented or not).
func (s *nestScanner) inHeredoc() bool {
	if s.lineStart {
		j := s.i
		for j < len(s.src) && (s.src[j] == ' ' || s.src[j] == '\t') {
			j++
		}
		marker := s.stack[len(s.stack)-1].marker
		end := j + len(marker)
		if end <= len(s.src) && string(s.src[j:end]) == string(marker) &&
			(end == len(s.src) || s.src[end] == '\n' || s.src[end] == '\r') {
			s.pop()
			s.advance(end - s.i)
			return true
		}
	}
	return s.inText()
}

// inText reads template text: $${ and %%{ are literal, ${ and %{ open an
// interpolation or a directive.
func (s *nestScanner) inText() bool {
	switch {
	case s.has("$${") || s.has("%%{"):
		s.advance(3)
	case s.has("${") || s.has("%{"):
		return s.push(nest{kind: nestInterp}, 2)
	default:
		s.advance(1)
	}
	return true
}
