package mgmt

import "strings"

// table is every resource the handler serves, with the tag each method
// needs (RabbitMQ's rabbit_mgmt_wm_* modules' is_authorized).
func (h *Handler) table() []route {
	m, v, pol, adm, mon := needManagement, needVhost, needPolicies, needAdministrator, needMonitoring
	get := func(need access, fn func(*request) response) map[string]endpoint {
		return map[string]endpoint{"GET": {need, fn}}
	}
	r := func(path string, methods map[string]endpoint) route {
		return route{pattern: strings.Split(strings.TrimPrefix(path, "/"), "/"), methods: methods}
	}
	return []route{
		r("/api/overview", get(m, (*request).overview)),
		r("/api/whoami", get(m, (*request).whoami)),
		r("/api/vhosts", get(m, (*request).vhosts)),
		r("/api/vhosts/{}", map[string]endpoint{"GET": {adm, (*request).vhost}, "PUT": {adm, (*request).putVhost}, "DELETE": {adm, (*request).deleteVhost}}),
		r("/api/users", get(adm, (*request).users)),
		r("/api/users/{}", map[string]endpoint{"GET": {adm, (*request).userGet}, "PUT": {adm, (*request).putUser}, "DELETE": {adm, (*request).deleteUser}}),
		r("/api/users/{}/permissions", get(adm, (*request).userPermissions)),
		r("/api/permissions", get(adm, (*request).permissions)),
		r("/api/permissions/{}/{}", map[string]endpoint{"GET": {adm, (*request).permission}, "PUT": {adm, (*request).putPermission}, "DELETE": {adm, (*request).deletePermission}}),
		r("/api/exchanges", get(m, (*request).exchanges)),
		r("/api/exchanges/{}", get(v, (*request).exchanges)),
		r("/api/exchanges/{}/{}", map[string]endpoint{"GET": {v, (*request).exchange}, "PUT": {v, (*request).putExchange}, "DELETE": {v, (*request).deleteExchange}}),
		r("/api/queues", get(m, (*request).queues)),
		r("/api/queues/{}", get(v, (*request).queues)),
		r("/api/queues/{}/{}", map[string]endpoint{"GET": {v, (*request).queue}, "PUT": {v, (*request).putQueue}, "DELETE": {v, (*request).deleteQueue}}),
		r("/api/queues/{}/{}/contents", map[string]endpoint{"DELETE": {v, (*request).purgeQueue}}),
		r("/api/queues/{}/{}/get", map[string]endpoint{"POST": {v, (*request).getMessages}}),
		r("/api/queues/{}/{}/bindings", get(v, (*request).queueBindings)),
		r("/api/bindings", get(m, (*request).bindings)),
		r("/api/bindings/{}", get(v, (*request).bindings)),
		r("/api/connections", get(m, (*request).connections)),
		r("/api/connections/{}", map[string]endpoint{"GET": {m, (*request).connection}, "DELETE": {m, (*request).closeConnection}}),
		r("/api/connections/{}/channels", get(m, (*request).connectionChannels)),
		r("/api/channels", get(m, (*request).channels)),
		r("/api/consumers", get(m, (*request).consumers)),
		r("/api/consumers/{}", get(m, (*request).consumers)),
		r("/api/policies", get(m, (*request).policies)),
		r("/api/policies/{}", get(v, (*request).policies)),
		r("/api/policies/{}/{}", map[string]endpoint{"GET": {pol, (*request).policy}, "PUT": {pol, (*request).putPolicy}, "DELETE": {pol, (*request).deletePolicy}}),
		r("/api/definitions", map[string]endpoint{"GET": {adm, (*request).definitions}, "POST": {adm, (*request).postDefinitions}}),
		r("/api/definitions/{}", get(adm, (*request).vhostDefinitions)),
		r("/api/aliveness-test/{}", get(v, (*request).aliveness)),
		r("/api/health/checks/alarms", get(m, (*request).alarms)),
		r("/api/nodes", get(mon, (*request).nodes)),
		// The simulator's own controls, listed by GET /api/sim
		// (simControls, in this order).
		r("/api/sim", get(m, (*request).simList)),
		r("/api/sim/now", get(adm, (*request).simNow)),
		r("/api/sim/advance", map[string]endpoint{"POST": {adm, (*request).simAdvance}}),
		r("/api/sim/restart", map[string]endpoint{"POST": {adm, (*request).simRestart}}),
		r("/api/sim/close-connections", map[string]endpoint{"POST": {adm, (*request).simCloseConnections}}),
		r("/api/sim/alarm", map[string]endpoint{"POST": {adm, (*request).simAlarm}}),
		r("/api/sim/close-at-delivery", map[string]endpoint{"POST": {adm, (*request).simCloseAtDelivery}}),
		r("/api/sim/nack-publishes", map[string]endpoint{"POST": {adm, (*request).simNackPublishes}}),
		r("/api/sim/stop-node", map[string]endpoint{"POST": {adm, (*request).simStopNode}}),
		r("/api/sim/kill-node", map[string]endpoint{"POST": {adm, (*request).simKillNode}}),
		r("/api/sim/start-node", map[string]endpoint{"POST": {adm, (*request).simStartNode}}),
		r("/api/sim/pause-node", map[string]endpoint{"POST": {adm, (*request).simPauseNode}}),
		r("/api/sim/resume-node", map[string]endpoint{"POST": {adm, (*request).simResumeNode}}),
		r("/api/sim/partition", map[string]endpoint{"POST": {adm, (*request).simPartition}}),
		r("/api/sim/heal", map[string]endpoint{"POST": {adm, (*request).simHeal}}),
	}
}
