package render

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// matchFields are the fields of Route that every route has and the
// renderer writes as the route's server, location and proxy_pass; every
// other field is a traffic setting.
var matchFields = map[string]bool{"host": true, "path": true, "pathType": true, "rules": true, "backendService": true}

// TestTrafficSettingsAreComplete walks Route's fields by reflection: each
// field that is not part of the match needs an entry in trafficSettings
// that sees it set, writes a directive for it and counts a size for it,
// and the shared fixture (validationtest.EverySetting, which admission's
// tests and the benchmarks use too) must set it. So a new setting without
// its entry, or with half of one, fails here by name.
func TestTrafficSettingsAreComplete(t *testing.T) {
	rows := map[string]trafficSetting{}
	for _, s := range trafficSettings {
		require.NotContains(t, rows, s.field, "two entries for %s", s.field)
		require.False(t, s.set == nil || s.write == nil || s.bound == nil, "the entry of %s lacks set, write or bound", s.field)
		rows[s.field] = s
	}
	plain := route("api.example.com", "/api", v1.PathTypePrefix, "users", 8080)
	full := everySetting(plain)
	typ := reflect.TypeFor[v1.Route]()
	fields := map[string]bool{}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields[name] = true
		if matchFields[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			s, ok := rows[name]
			require.True(t, ok, "Route.%s has no entry in trafficSettings (render/settings.go): the renderer would ignore it", typ.Field(i).Name)
			r := plain
			reflect.ValueOf(&r).Elem().Field(i).Set(reflect.ValueOf(full).Field(i))
			require.False(t, reflect.ValueOf(r).Field(i).IsZero(), "validationtest.EverySetting leaves %s unset: set it there", name)

			assert.True(t, s.set(&r), "set does not see %s set", name)
			assert.False(t, s.set(&plain), "set sees %s on a route without it", name)
			w := &trafficWriter{t: &routeTraffic{}, id: routeID("test"), backend: func(n v1.ServiceName, p int32) string { return string(n) }}
			require.Empty(t, s.write(w, &r, field.NewPath(name)))
			assert.True(t, w.loc.Len()+w.http.Len() > 0 || *w.t != routeTraffic{}, "write writes nothing for %s", name)
			location, http := s.bound(&r, len("shop.svc."+DefaultClusterDomain))
			assert.Positive(t, location+http, "bound counts no size for %s", name)

			config, err := Config(gateway("gw", r), Options{})
			require.NoError(t, err)
			want, err := Config(gateway("gw", plain), Options{})
			require.NoError(t, err)
			assert.NotEqual(t, want, config, "%s does not change the configuration", name)
			checkBound(t, gateway("gw", r))
		})
	}
	for name := range rows {
		assert.True(t, fields[name], "trafficSettings has an entry for %s, which Route does not have", name)
	}
}
