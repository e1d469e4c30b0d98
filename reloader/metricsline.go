package reloader

import (
	"bytes"
	"errors"

	"example.com/apigateway-operator/render"
)

// logLine is one parsed line of the metrics log.
type logLine struct {
	// route and backend are as nginx wrote them, "" for none: with
	// escape=none nginx writes nothing for a variable not set (the
	// route's name where no route answered) or empty (the map's default,
	// where no backend was proxied to); "-" is read as none too.
	route, backend []byte
	// class is the status's first digit, 1 to 5.
	class int
	// requestTime is $request_time, upstreamTime the sum of
	// $upstream_response_time's times when upstream (a backend was
	// tried).
	requestTime, upstreamTime float64
	upstream                  bool
}

var errMalformed = errors.New("malformed metrics log line")

// syslogTag is what ends nginx's syslog header: the tag, a colon, a
// space.
var syslogTag = []byte(" " + render.MetricsLogTag + ": ")

// parseLine reads one datagram of the metrics log, strictly: nginx's
// syslog header ("<PRI>Mmm dd hh:mm:ss gw: ", without host name), then
// render's fields, tab-separated. Anything else is errMalformed. It
// never allocates for a line it refuses, and reads each byte a bounded
// number of times.
func parseLine(b []byte) (logLine, error) {
	var l logLine
	if len(b) > maxLine {
		return l, errMalformed
	}
	rest, ok := syslogBody(b)
	if !ok {
		return l, errMalformed
	}
	var f [render.MetricsLogFields][]byte
	for i := range f {
		if i == len(f)-1 {
			f[i] = rest
			break
		}
		j := bytes.IndexByte(rest, '\t')
		if j < 0 {
			return l, errMalformed
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if bytes.IndexByte(f[len(f)-1], '\t') >= 0 {
		return l, errMalformed
	}
	l.route, l.backend = dash(f[0]), dash(f[1])
	if !printable(l.route) || !printable(l.backend) {
		return l, errMalformed
	}
	s := f[2]
	if len(s) != 3 || s[0] < '1' || s[0] > '5' || !digit(s[1]) || !digit(s[2]) {
		return l, errMalformed
	}
	l.class = int(s[0] - '0')
	if l.requestTime, ok = seconds(f[3]); !ok {
		return l, errMalformed
	}
	l.upstreamTime, l.upstream, ok = upstreamTimes(f[4])
	if !ok {
		return l, errMalformed
	}
	return l, nil
}

// syslogBody is b after nginx's syslog header, which has "<", one to
// three digits, ">", a 15-byte timestamp ("Nov 28 13:50:00", the day
// padded with a space), and syslogTag.
func syslogBody(b []byte) ([]byte, bool) {
	if len(b) < 3 || b[0] != '<' {
		return nil, false
	}
	i := 1
	for i < len(b) && i <= 3 && digit(b[i]) {
		i++
	}
	if i == 1 || i >= len(b) || b[i] != '>' {
		return nil, false
	}
	ts := b[i+1:]
	if len(ts) < 15+len(syslogTag) || ts[3] != ' ' || ts[6] != ' ' || ts[9] != ':' || ts[12] != ':' {
		return nil, false
	}
	if !bytes.Equal(ts[15:15+len(syslogTag)], syslogTag) {
		return nil, false
	}
	return ts[15+len(syslogTag):], true
}

// dash is v, or "" for nginx's "-" (no value).
func dash(v []byte) []byte {
	if len(v) == 1 && v[0] == '-' {
		return nil
	}
	return v
}

// printable: v holds no control byte.
func printable(v []byte) bool {
	for _, c := range v {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

func digit(c byte) bool { return c >= '0' && c <= '9' }

// seconds reads nginx's milliseconds as seconds: digits, a '.', three
// digits (at most 10 digits before the dot).
func seconds(v []byte) (float64, bool) {
	dot := bytes.IndexByte(v, '.')
	if dot < 1 || dot > 10 || len(v) != dot+4 {
		return 0, false
	}
	var ms int64
	for i, c := range v {
		if i == dot {
			continue
		}
		if !digit(c) {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return float64(ms) / 1000, true
}

// upstreamTimes sums $upstream_response_time: empty (or "-") when no
// backend was tried, else times separated by ", " (backends tried in turn) or " : "
// (an internal redirect), each "-" when nginx has none for it; at most
// maxTimes. It reports whether any backend was tried.
func upstreamTimes(v []byte) (sum float64, tried bool, ok bool) {
	if len(v) == 0 || (len(v) == 1 && v[0] == '-') {
		return 0, false, true
	}
	for n := 0; ; n++ {
		if n == maxTimes {
			return 0, false, false
		}
		end := len(v)
		sep := 0
		if i := bytes.IndexByte(v, ' '); i >= 0 {
			end = i
			switch {
			case i > 0 && v[i-1] == ',':
				end, sep = i-1, 2
			case bytes.HasPrefix(v[i:], []byte(" : ")):
				sep = 3
			default:
				return 0, false, false
			}
		}
		tok := v[:end]
		if len(tok) != 1 || tok[0] != '-' {
			s, ok := seconds(tok)
			if !ok {
				return 0, false, false
			}
			sum += s
			tried = true
		}
		if sep == 0 {
			return sum, tried, true
		}
		v = v[end+sep:]
		if len(v) == 0 {
			return 0, false, false
		}
	}
}
