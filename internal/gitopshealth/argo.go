package gitopshealth

import (
	"context"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Health is what an Argo CD health check returns: Argo reads these two fields of the table the script returns.
type Health struct {
	Status  string
	Message string
}

// argoStatuses are the health statuses Argo accepts from a script; any other one it shows as Unknown ("Lua returned
// an invalid health status"), which ArgoHealth makes an error.
var argoStatuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true}

// argoScriptTimeout is the time Argo gives one health script.
const argoScriptTimeout = time.Second

// ArgoHealth runs a health check as Argo CD runs a resource.customizations.health script: in a fresh gopher-lua
// state opened without the standard libraries but the base, table and package ones, with the object in the global
// obj (numbers as Lua numbers, lists as sequences, maps as tables), under Argo's one-second limit. Argo also opens
// a reduced os library; ArgoHealth does not, so a check that reaches for os fails here rather than depend on it.
// obj is an object as the API server returns it (unstructured.Unstructured.Object).
func ArgoHealth(script string, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), NRet: 0, Protect: true}, lua.LString(name)); err != nil {
			return Health{}, fmt.Errorf("open the Lua library %q: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), argoScriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	value, err := luaValue(l, obj)
	if err != nil {
		return Health{}, err
	}
	l.SetGlobal("obj", value)
	if err := l.DoString(script); err != nil {
		return Health{}, fmt.Errorf("the health script failed: %w", err)
	}
	return healthOf(l.Get(-1))
}

// healthOf reads the table a script returned as Argo does: its status and message fields.
func healthOf(ret lua.LValue) (Health, error) {
	table, ok := ret.(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the health script returned a %s, not a table", ret.Type())
	}
	var h Health
	for field, into := range map[string]*string{"status": &h.Status, "message": &h.Message} {
		switch v := table.RawGetString(field).(type) {
		case lua.LString:
			*into = string(v)
		case *lua.LNilType:
		default:
			return Health{}, fmt.Errorf("the health script's %s is a %s, not a string", field, v.Type())
		}
	}
	if !argoStatuses[h.Status] {
		return Health{}, fmt.Errorf("the health script returned status %q, which Argo CD shows as Unknown", h.Status)
	}
	return h, nil
}

// luaValue turns a decoded JSON value into the Lua value Argo hands a script.
func luaValue(l *lua.LState, v any) (lua.LValue, error) {
	switch v := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(v), nil
	case string:
		return lua.LString(v), nil
	case int64:
		return lua.LNumber(v), nil
	case float64:
		return lua.LNumber(v), nil
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			lv, err := luaValue(l, item)
			if err != nil {
				return nil, err
			}
			t.Append(lv)
		}
		return t, nil
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for key, item := range v {
			lv, err := luaValue(l, item)
			if err != nil {
				return nil, err
			}
			t.RawSetString(key, lv)
		}
		return t, nil
	}
	return nil, fmt.Errorf("no Lua value for a %T", v)
}
