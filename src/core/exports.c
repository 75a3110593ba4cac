/* libweft.so is made of the module archives linked whole; this file only gives the shared
 * library target a source of its own. The version script (weft.map) exports weft* only. */
