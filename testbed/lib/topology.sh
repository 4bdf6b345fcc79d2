# testbed/lib/topology.sh, sourced by testbed/run: the guests and links of TOPO, each link's MTU and prefix from the
# --mtu/--prefix specs, each guest's address on each link and its NICs in device order. Reads TOPO, MEM, MTU_SPECS,
# PREFIX_SPECS; sets GUESTS, NG, LA/LB (a link's ends, LB -1 for a guest's own loopback NIC), LNET, LPAR (the index
# among parallel links), NL, LMTU, LPFX and NICS, and defines linkname and ip_of. Stops with bad on a bad topology or
# spec, before anything is booted.

GUESTS=(); LA=(); LB=(); LNET=(); LPAR=()
letters=(a b c d e f g h i j k l m n o p)
mkguests() { GUESTS=("${letters[@]:0:$1}"); }
addlink() { LA+=("$1"); LB+=("$2"); LNET+=("$3"); local k=0 i
  for ((i = 0; i < ${#LA[@]} - 1; i++)); do [[ ${LA[i]} == "$1" && ${LB[i]} == "$2" ]] && ((k++)); done
  LPAR+=("$k"); }
case $TOPO in
  single)   mkguests 1; addlink 0 -1 100 ;;
  pair)     mkguests 2; addlink 0 1 100 ;;
  triangle) mkguests 3; addlink 0 1 101; addlink 0 2 100; addlink 1 2 102 ;;
  twins)    mkguests 2; addlink 0 1 100; addlink 0 1 101 ;;
  line:*|mesh:*|ring:*)
    n=${TOPO#*:}
    [[ $n =~ ^[0-9]+$ ]] && (( n >= 2 && n <= 16 )) || bad "$TOPO: N must be 2..16"
    [[ $TOPO != ring:* ]] || (( n >= 3 )) || bad "$TOPO: a ring needs N >= 3"
    mkguests "$n"
    if [[ $TOPO == line:* || $TOPO == ring:* ]]; then
      for ((i = 0; i < n - 1; i++)); do addlink $i $((i + 1)) $((100 + i)); done
      [[ $TOPO == line:* ]] || addlink 0 $((n - 1)) $((100 + n - 1))
    else
      k=0; for ((i = 0; i < n; i++)); do for ((j = i + 1; j < n; j++)); do addlink $i $j $((100 + k)); ((k++)); done; done
    fi ;;
  *) bad "unknown topology '$TOPO' (single, pair, triangle, line:N, ring:N, twins, mesh:N)" ;;
esac
NG=${#GUESTS[@]}; NL=${#LA[@]}
(( NG * MEM <= $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo) )) \
  || msg "warning: $NG guests x $MEM MiB exceeds the host's available memory"

# per-link MTU / prefix: specs are N, LINK=N with LINK a-b or a-b:K
linkname() { local b=${LB[$1]}; [[ $b == -1 ]] && b=${LA[$1]}; echo "${GUESTS[${LA[$1]}]}-${GUESTS[$b]}"; }
apply_specs() { # $1 = name of the result array, $2 = default, rest = specs
  local -n arr=$1; local def=$2; shift 2; local s l val hit
  for ((l = 0; l < NL; l++)); do arr[l]=$def; done
  for s in "$@"; do
    if [[ $s =~ ^[0-9]+$ ]]; then for ((l = 0; l < NL; l++)); do arr[l]=$s; done; continue; fi
    [[ $s =~ ^([a-p])-([a-p])(:([0-9]+))?=([0-9]+)$ ]] || bad "bad link spec '$s' (N, a-b=N or a-b:K=N)"
    val=${BASH_REMATCH[5]}; hit=0
    for ((l = 0; l < NL; l++)); do
      local n1 n2; n1=$(linkname $l); n2=${n1#*-}-${n1%-*}
      if [[ ${BASH_REMATCH[1]}-${BASH_REMATCH[2]} == "$n1" || ${BASH_REMATCH[1]}-${BASH_REMATCH[2]} == "$n2" ]] \
         && [[ -z ${BASH_REMATCH[4]} || ${BASH_REMATCH[4]} == "${LPAR[l]}" ]]; then arr[l]=$val; hit=1; fi
    done
    [[ $hit == 1 ]] || bad "link spec '$s' matches no link of $TOPO"
  done
}
LMTU=(); LPFX=()
apply_specs LMTU 1500 "${MTU_SPECS[@]}"
apply_specs LPFX 24 "${PREFIX_SPECS[@]}"
for ((l = 0; l < NL; l++)); do
  (( LMTU[l] >= 1280 && LMTU[l] <= 9000 )) || bad "MTU ${LMTU[l]} out of range 1280..9000"
  (( LPFX[l] >= 8 && LPFX[l] <= 31 )) || bad "prefix ${LPFX[l]} out of range 8..31"
done

# guest g's address on link l: 192.168.NET.(g+1) where both ends' such addresses are hosts of the link's subnet (a
# /24 and every test that names an address); else the subnet's first two hosts, .1 and .2 (.0 and .1 on a /31), the
# link's first guest taking the first (a /30 triangle would give guest c the broadcast address .3)
host_ok() { local block=$((1 << (32 - LPFX[$1]))) h=$(($2 + 1))
  if (( LPFX[$1] == 31 )); then (( h < 2 )); else (( h >= 1 && h <= block - 2 )); fi; }
ip_of() { local l=$1 g=$2 b=${LB[$1]}; [[ $b == -1 ]] && b=${LA[$1]}
  if host_ok "$l" "${LA[l]}" && host_ok "$l" "$b"; then echo "192.168.${LNET[l]}.$((g + 1))"; return; fi
  local first=1; (( LPFX[l] == 31 )) && first=0
  echo "192.168.${LNET[l]}.$((first + (g == ${LA[l]} ? 0 : 1)))"; }
declare -A NICS   # NICS[g] = "link:side ..." in device order
for ((g = 0; g < NG; g++)); do
  lst=()
  # order: by peer index, then parallel index (link order)
  for ((p = 0; p < NG; p++)); do
    for ((l = 0; l < NL; l++)); do
      if [[ ${LB[l]} == -1 && ${LA[l]} == "$g" && $p == "$g" ]]; then lst+=("$l"); continue; fi
      [[ ${LA[l]} == "$g" && ${LB[l]} == "$p" ]] && lst+=("$l")
      [[ ${LB[l]} == "$g" && ${LA[l]} == "$p" ]] && lst+=("$l")
    done
  done
  NICS[$g]="${lst[*]}"
done
