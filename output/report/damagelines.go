// SPDX-License-Identifier: Apache-2.0

package report

import "strings"

// DamageLines is what the table's header says of damaged files, a line each, for views
// that show it their own way (the HTML page).
func DamageLines(damaged []FileDamage) []string {
	var b strings.Builder
	writeDamage(&b, damaged)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}
