package inflight

// BytesPerElement is the most one JSON element (an array element, or an
// object's member) makes a webhook hold while it decodes the element and
// works on what it decoded, slice growth included. The worst measured: a
// v1 gateway of 350,000 "{}" routes, converted to v1alpha1, held 970
// bytes per route, which DecodedBound counts as two elements ("{" and
// ","); a list of strings ("",) held 90 bytes per element. The conversion
// and admission tests hold the peak heap of such reviews to what they are
// charged.
const BytesPerElement = 768

// DecodedBound is the most the JSON value raw decodes into, for Charge:
// its own bytes (every string may be copied) and BytesPerElement per
// element. Counting the commas and opening brackets outside strings
// counts every element at least once, and costs a pass over raw that is
// small beside decoding it.
func DecodedBound(raw []byte) int64 {
	return int64(len(raw)) + BytesPerElement*int64(elements(raw))
}

// elements counts the commas, '{' and '[' of the JSON value raw that are
// not inside strings.
func elements(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ',', '{', '[':
			n++
		case '"':
			i = stringEnd(raw, i+1)
		}
	}
	return n
}

// stringEnd returns the index of the quote that closes the string whose
// content starts at i (len(raw) when there is none).
func stringEnd(raw []byte, i int) int {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(raw)
}
