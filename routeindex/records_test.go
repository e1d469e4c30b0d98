package routeindex

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "example.com/apigateway-operator/api/v1"
)

// hostClaims are n records as the API server serves them, with a UID and
// a resource version.
func hostClaims(n int) []v1.HostClaim {
	out := make([]v1.HostClaim, n)
	for i := range out {
		host := fmt.Sprintf("svc%d.team%d.example.com", i, i%10)
		out[i] = v1.HostClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1.HostClaimName(host), UID: types.UID("uid-" + strconv.Itoa(i)), ResourceVersion: strconv.Itoa(i + 1)},
			Spec:       v1.HostClaimSpec{Host: v1.Hostname(host), Namespace: fmt.Sprintf("ns%d", i%10)},
		}
	}
	return out
}

// TestIndexedOncePerChange: the same records, listed in another order,
// reuse the last index; a new version of one is indexed again, and
// records without a UID (a fake client's) are never taken for others.
func TestIndexedOncePerChange(t *testing.T) {
	claims := hostClaims(20)
	first := indexed(claims, nil)
	reversed := slices.Clone(claims)
	slices.Reverse(reversed)
	again := indexed(reversed, nil)
	assert.Same(t, &first.Claims[0], &again.Claims[0], "the same versions: the last index")
	owner, owned := again.Owner("svc3.team3.example.com", "other")
	assert.Equal(t, []any{"ns3", true}, []any{owner, owned})

	changed := slices.Clone(claims)
	changed[3].ResourceVersion, changed[3].Spec.Namespace = "99", "ns-new"
	owner, _ = indexed(changed, nil).Owner("svc3.team3.example.com", "other")
	assert.Equal(t, "ns-new", owner, "a new version is indexed again")

	fake := slices.Clone(claims)
	for i := range fake {
		fake[i].UID = ""
	}
	fake[3].Spec.Namespace = "ns-fake"
	indexed(fake, nil)
	owner, _ = indexed(fake, nil).Owner("svc3.team3.example.com", "other")
	assert.Equal(t, "ns-fake", owner, "without UIDs, no index is reused")
}

// BenchmarkRecordsIndexed is what Records adds to a listing of 1,000
// records for each reconcile or admission request: the fingerprint, when
// they have not changed since the last index.
func BenchmarkRecordsIndexed(b *testing.B) {
	claims := hostClaims(1000)
	indexed(claims, nil)
	for b.Loop() {
		indexed(claims, nil)
	}
}
