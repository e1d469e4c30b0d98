package basicauth

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hashes of "secret1", each verified by Debian's nginx 1.22.1 (the
// data-plane test in package render checks bcrypt and {SHA} again).
const (
	bcryptY = "$2y$04$yNnYsa4BI8knQfCPVP3jUe8eBQkLTe9RcnVusx6DmmDE9tIaGpYO2"
	bcryptA = "$2a$04$yNnYsa4BI8knQfCPVP3jUe8eBQkLTe9RcnVusx6DmmDE9tIaGpYO2"
	bcryptB = "$2b$04$yNnYsa4BI8knQfCPVP3jUe8eBQkLTe9RcnVusx6DmmDE9tIaGpYO2"
	apr1    = "$apr1$0nNgjeSQ$UUXGMn6jmZSh4.nLwsuJu1"
	sha     = "{SHA}AMr9EmGC6KnnwBuy8N/QBJa+ck8="
	sha256c = "$5$jiPpqLiszMIBKdvB$Sr1nBoX0gUvL/RKBVKoFKtErptQxS/RLjGFsMSW4BH0"
	sha512c = "$6$RlAXQcqGNlTDIFoD$Yt2Q1BczaltrVubqCZYEYf6iwyVTyfJPsyaJNkoAQ1FxRYxgeV9VLp5KP17Jsr7anaQ14HZa4EMogus0COa9U1"
	md5c    = "$1$4jxXpK70$Ek7II7MO6OtuqKbGkEyw8/"
	yescr   = "$y$j9T$abcdefghijklmnop$mbhQylRPkLuBMxFQXuVJARf1OR4K9MuLfX7XatS8HV1"
)

func TestCheck(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string
		refused string // a part of the error; "" accepts
	}{
		"bcrypt $2y$":      {in: "alice:" + bcryptY + "\n", want: "alice:" + bcryptY + "\n"},
		"bcrypt $2a$":      {in: "alice:" + bcryptA, want: "alice:" + bcryptA + "\n"},
		"bcrypt $2b$":      {in: "alice:" + bcryptB, want: "alice:" + bcryptB + "\n"},
		"apr1":             {in: "a:" + apr1, want: "a:" + apr1 + "\n"},
		"{SHA}":            {in: "a:" + sha, want: "a:" + sha + "\n"},
		"$5$":              {in: "a:" + sha256c, want: "a:" + sha256c + "\n"},
		"$6$":              {in: "a:" + sha512c, want: "a:" + sha512c + "\n"},
		"$6$ with rounds":  {in: "a:$6$rounds=5000$" + sha512c[3:], want: "a:$6$rounds=5000$" + sha512c[3:] + "\n"},
		"several users":    {in: "a:" + bcryptY + "\nb:" + apr1 + "\n", want: "a:" + bcryptY + "\nb:" + apr1 + "\n"},
		"CRLF, comments":   {in: "# users\r\n\r\na:" + sha + "\r\n  \n", want: "a:" + sha + "\n"},
		"trailing comment": {in: "a:" + sha + ":Alice Doe", want: "a:" + sha + "\n"},

		"{PLAIN}":            {in: "a:{PLAIN}secret1", refused: "line 1: a plaintext password"},
		"bare password":      {in: "a:secret1", refused: "line 1: not a hash the gateway accepts"},
		"{SSHA}":             {in: "a:{SSHA}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", refused: "not a hash"},
		"md5-crypt $1$":      {in: "a:" + md5c, refused: "not a hash"},
		"yescrypt":           {in: "a:" + yescr, refused: "not a hash"},
		"DES crypt":          {in: "a:abJnggxhB/yWI", refused: "not a hash"},
		"a bad line later":   {in: "a:" + sha + "\nb:" + bcryptY + "x", refused: "line 2: not a hash"},
		"no colon":           {in: "alice", refused: `line 1: not "user:hash"`},
		"empty user":         {in: ":" + sha, refused: "line 1: the user"},
		"user with a space":  {in: "a b:" + sha, refused: "the user"},
		"user twice":         {in: "a:" + sha + "\na:" + apr1, refused: "line 2: a user listed on an earlier line again"},
		"empty":              {in: "", refused: "no user"},
		"comments only":      {in: "# nobody\n", refused: "no user"},
		"bcrypt cost 13":     {in: "a:$2y$13$" + bcryptY[7:], refused: "cost"},
		"bcrypt cost 03":     {in: "a:$2y$03$" + bcryptY[7:], refused: "cost"},
		"rounds 1000000":     {in: "a:$5$rounds=1000000$" + sha256c[3:], refused: "cost"},
		"bcrypt cut short":   {in: "a:" + bcryptY[:40], refused: "not a hash"},
		"a NUL in the hash":  {in: "a:" + sha[:10] + "\x00" + sha[11:], refused: "not a hash"},
		"too large":          {in: strings.Repeat("#", MaxFileBytes+1), refused: "over the bound"},
		"too many users":     {in: users(MaxUsers + 1), refused: "more than 512 users"},
		"as many as allowed": {in: users(MaxUsers), want: users(MaxUsers)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Check([]byte(tc.in))
			if tc.refused != "" {
				require.ErrorIs(t, err, ErrRefused)
				assert.Contains(t, err.Error(), tc.refused)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestCheckNamesNoSecret: a refusal names the line, never its user or
// hash (the error reaches the gateway's status).
func TestCheckNamesNoSecret(t *testing.T) {
	for _, in := range []string{"zed:{PLAIN}hunter2", "zed:hunter2", "zed:" + md5c, "zed:" + sha + "\nzed:" + sha} {
		_, err := Check([]byte(in))
		require.Error(t, err)
		for _, secret := range []string{"zed", "hunter2", md5c, sha} {
			assert.NotContains(t, err.Error(), secret)
		}
	}
}

func TestFile(t *testing.T) {
	assert.Equal(t, File("users"), File("users"))
	assert.NotEqual(t, File("users"), File("users2"))
	assert.Regexp(t, `^htpasswd-[0-9a-f]{16}$`, File("../../etc/passwd"))
	assert.Equal(t, Dir+"/"+File("x"), Path("x"))
}

func users(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("user" + strconv.Itoa(i) + ":" + sha + "\n")
	}
	return b.String()
}
