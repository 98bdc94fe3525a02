package mgmt
