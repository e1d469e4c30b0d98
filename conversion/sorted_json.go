package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// omission is what sortedV1OnlyJSON leaves out of a JSON object: some of
// its members, and, from each object element of a member's array value,
// what another omission says. That is what v1OnlyJSONViaMaps removes, and
// no more, whatever the JSON.
type omission struct {
	names    []string
	elements map[string]*omission
}

// leaves reports whether o leaves out the member name. A nil omission
// leaves out nothing.
func (o *omission) leaves(name string) bool {
	return o != nil && slices.Contains(o.names, name)
}

// inElements is the omission for the elements of the member name's array
// value.
func (o *omission) inElements(name string) *omission {
	if o == nil {
		return nil
	}
	return o.elements[name]
}

// The members of a v1 spec that v1alpha1 carries itself, as
// v1OnlyJSONViaMaps removes them.
var (
	omitPlainRoutes = &omission{names: []string{"image", "replicas", "routes"}}
	omitBackends    = &omission{names: []string{"image", "replicas"},
		elements: map[string]*omission{"routes": {names: []string{"backendService"}}}}
)

// sortedV1OnlyJSON makes the bytes v1OnlyJSONViaMaps makes, without the
// maps: it copies the JSON full token by token, leaving out the same
// members and writing each object's members sorted by name, as
// encoding/json writes a map. Numbers, true, false and null are copied as
// they are, which is how encoding/json writes them again after decoding
// them into an any with UseNumber. So are strings that encoding/json
// writes unchanged (printable ASCII with nothing to escape); the others
// are decoded and encoded again by encoding/json itself. It fails, and v1OnlyJSON falls
// back to the maps, on what it does not expect (duplicate names, invalid
// UTF-8), which encoding/json does not write.
func sortedV1OnlyJSON(full []byte, plainRoutes bool) (json.RawMessage, error) {
	omit := omitBackends
	if plainRoutes {
		omit = omitPlainRoutes
	}
	// appendSortedObject checks for duplicate names itself, after sorting.
	dec := jsontext.NewDecoder(bytes.NewBuffer(full), jsontext.AllowDuplicateNames(true))
	return appendSorted(make([]byte, 0, len(full)), dec, omit, nil)
}

// appendSorted appends the next value of dec, re-encoded, to out, with
// what inObject says left out of it if it is an object, and what inElements
// says left out of its object elements if it is an array.
func appendSorted(out []byte, dec *jsontext.Decoder, inObject, inElements *omission) ([]byte, error) {
	switch dec.PeekKind() {
	case '{':
		return appendSortedObject(out, dec, inObject)
	case '[':
		return appendSortedArray(out, dec, inElements)
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if raw.Kind() == '"' {
		_, quoted, err := reencodeString(raw)
		return append(out, quoted...), err
	}
	return append(out, raw...), nil
}

// memberSpan is one member of an object being re-encoded: its name,
// decoded, and where the member (name, colon, value) is in the output.
type memberSpan struct {
	name       string
	start, end int
}

// appendSortedObject writes the members in the order it reads them, then,
// unless that order is already sorted (as it is for most objects a struct
// makes), moves them into order.
func appendSortedObject(out []byte, dec *jsontext.Decoder, omit *omission) ([]byte, error) {
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	out = append(out, '{')
	base := len(out)
	var members []memberSpan
	for dec.PeekKind() != '}' {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		name, quoted, err := reencodeString(raw)
		if err != nil {
			return nil, err
		}
		if omit.leaves(name) {
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		if len(members) > 0 {
			out = append(out, ',')
		}
		start := len(out)
		out = append(append(out, quoted...), ':')
		if out, err = appendSorted(out, dec, nil, omit.inElements(name)); err != nil {
			return nil, err
		}
		members = append(members, memberSpan{name: name, start: start, end: len(out)})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	byName := func(a, b memberSpan) int { return strings.Compare(a.name, b.name) }
	if !slices.IsSortedFunc(members, byName) {
		written := slices.Clone(out[base:])
		slices.SortFunc(members, byName)
		out = out[:base]
		for i, m := range members {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, written[m.start-base:m.end-base]...)
		}
	}
	for i := 1; i < len(members); i++ {
		if members[i].name == members[i-1].name {
			// A map keeps the last; leave that to v1OnlyJSONViaMaps.
			return nil, fmt.Errorf("duplicate member %q", members[i].name)
		}
	}
	return append(out, '}'), nil
}

func appendSortedArray(out []byte, dec *jsontext.Decoder, omit *omission) ([]byte, error) {
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	out = append(out, '[')
	for first := true; dec.PeekKind() != ']'; first = false {
		if !first {
			out = append(out, ',')
		}
		var err error
		if out, err = appendSorted(out, dec, omit, nil); err != nil {
			return nil, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	return append(out, ']'), nil
}

// reencodeString returns the JSON string raw as encoding/json decodes it
// and encodes it again.
func reencodeString(raw jsontext.Value) (string, []byte, error) {
	content := raw[1 : len(raw)-1]
	if writtenAsIs(content) {
		return string(content), raw, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", nil, err
	}
	quoted, err := json.Marshal(s)
	return s, quoted, err
}

// writtenAsIs reports whether encoding/json writes the string s as it is,
// between quotes: printable ASCII but for the quote, the backslash and the
// characters it escapes for HTML.
func writtenAsIs(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
