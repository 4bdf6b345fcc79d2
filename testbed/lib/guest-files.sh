# testbed/lib/guest-files.sh, sourced by testbed/run once the run folder exists: what each guest reads when it
# boots, in RUN/<guest>/: env.sh (the TESTBED_* variables of docs/testing.md, JAVA_HOME, PATH, the -e variables),
# net.conf (its NICs: device, MAC, address, prefix, MTU), cmd, guest.conf (the init's settings) and hosts. Reads
# the topology of testbed/lib/topology.sh and run's options.

JH=${JAVA_HOME:-}
[[ -n $JH && -x $JH/bin/java ]] || JH=$(ls -d /usr/lib/jvm/temurin-25* /usr/lib/jvm/*-25-* 2>/dev/null | head -1)
[[ $ARCH != aarch64 || $(uname -m) == aarch64 ]] || JH=/usr/lib/jvm/java-25-openjdk-arm64   # in the arm64 root
q() { printf '%q' "$1"; }
# a folder of programs the host's root lacks (testbed/device-run's pack: perftest, iproute2, ...): last on the guests'
# PATH, so that the host's own programs win where it has them
TOOLS=${TESTBED_TOOLS:-}
[[ -z $TOOLS ]] || { [[ -d $TOOLS && $TOOLS =~ ^/[A-Za-z0-9/._+-]+$ ]] \
  || bad "TESTBED_TOOLS=$TOOLS: not a directory given by an absolute path of plain characters"; }
for ((g = 0; g < NG; g++)); do
  n=${GUESTS[g]}; G=$RUN/$n; mkdir -p "$G/out"
  : > "$G/net.conf"; devs=(); peers=()
  declare -A PIPS=() PMYIPS=() PDEVS=()
  {
    echo "TESTBED_NAME=$n"
    echo "TESTBED_GUESTS=$(q "${GUESTS[*]}")"
    echo "TESTBED_TOPOLOGY=$(q "$TOPO")"
    echo "TESTBED_RUN=$(q "$RUN")"
    echo "TESTBED_SHARED=$(q "$RUN/shared")"
    echo "TESTBED_OUT=$(q "$G/out")"
    echo "TESTBED_ACCEL=$ACC"
    echo "TESTBED_CPUS=$CPUS"
    echo "TESTBED_TIMEOUT=$TIMEOUT"
    echo "TESTBED_NLINKS=$NL"
    echo "TESTBED_CWD=$(q "$CWD")"
    echo "JMESH_TESTBED=1"
    k=0
    for l in ${NICS[$g]}; do
      dev=rxe$k; devs+=("$dev")
      if [[ ${LB[l]} == -1 ]]; then peer=""; pidx=$g; else
        if [[ ${LA[l]} == "$g" ]]; then pidx=${LB[l]}; else pidx=${LA[l]}; fi; peer=${GUESTS[pidx]}; fi
      myip=$(ip_of $l $g); pip=$(ip_of $l $pidx)
      mac=$(printf '52:54:00:7b:%02x:%02x' "$g" "$k")
      echo "$dev $mac $myip ${LPFX[l]} ${LMTU[l]}" >> "$G/net.conf"
      echo "TESTBED_DEV_${dev}_IP=$myip"
      echo "TESTBED_DEV_${dev}_PREFIX=${LPFX[l]}"
      echo "TESTBED_DEV_${dev}_MTU=${LMTU[l]}"
      echo "TESTBED_DEV_${dev}_PEER=$peer"
      echo "TESTBED_DEV_${dev}_PEER_IP=$([[ -n $peer ]] && echo "$pip")"
      echo "TESTBED_DEV_${dev}_LINK=$l"
      echo "TESTBED_DEV_${dev}_MAC=$mac"
      if [[ -n $peer ]]; then
        [[ -n ${PIPS[$peer]:-} ]] || peers+=("$peer")
        PIPS[$peer]+="${PIPS[$peer]:+ }$pip"; PMYIPS[$peer]+="${PMYIPS[$peer]:+ }$myip"; PDEVS[$peer]+="${PDEVS[$peer]:+ }$dev"
      fi
      ((k++))
    done
    echo "TESTBED_DEVS=$(q "${devs[*]}")"
    echo "TESTBED_PEERS=$(q "${peers[*]}")"
    for p in "${peers[@]}"; do
      for P in "${p^^}" "$p"; do
        echo "TESTBED_PEER_${P}_IP=${PIPS[$p]%% *}"
        echo "TESTBED_PEER_${P}_MYIP=${PMYIPS[$p]%% *}"
        echo "TESTBED_PEER_${P}_DEV=${PDEVS[$p]%% *}"
        echo "TESTBED_PEER_${P}_IPS=$(q "${PIPS[$p]}")"
        echo "TESTBED_PEER_${P}_MYIPS=$(q "${PMYIPS[$p]}")"
        echo "TESTBED_PEER_${P}_DEVS=$(q "${PDEVS[$p]}")"
      done
    done
    echo "HOME=$(q "${HOME:-/root}")"
    echo "USER=root"
    echo "LANG=C.UTF-8"
    echo "TERM=dumb"
    [[ -n $JH ]] && echo "JAVA_HOME=$(q "$JH")"
    echo "PATH=$(q "$RUN/lib/bin:${JH:+$JH/bin:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${TOOLS:+:$TOOLS}")"
    for s in "${ENV_SPECS[@]}"; do
      if [[ $s == *=* ]]; then echo "${s%%=*}=$(q "${s#*=}")"; else echo "$s=$(q "${!s:-}")"; fi
    done
  } > "$G/env.sh"
  unset PIPS PMYIPS PDEVS
  printf '%s\n' "$CMD" > "$G/cmd"
  rwm=""; for ((r = 0; r < ${#RW_DIRS[@]}; r++)); do rwm+=" rw$r:${RW_DIRS[r]}"; done
  {
    echo "GUESTS='${GUESTS[*]}'"
    echo "BOOT_WAIT=$BOOT_TIMEOUT"
    echo "HOSTNAME=tb-$n"
    echo "RW_MOUNTS='${rwm# }'"
    [[ -z $TOOLS ]] || echo "TOOLS='$TOOLS'"
    [[ $KDIR == "$TB" ]] || echo "ARCH_ROOT=1"
  } > "$G/guest.conf"
  {
    echo "127.0.0.1 localhost"
    echo "127.0.1.1 tb-$n $n"
    for ((p = 0; p < NG; p++)); do
      [[ $p == "$g" ]] && continue
      for l in ${NICS[$g]}; do
        if [[ ${LA[l]} == "$p" || ${LB[l]} == "$p" ]]; then echo "$(ip_of $l $p) ${GUESTS[p]} tb-${GUESTS[p]}"; break; fi
      done
    done
  } > "$G/hosts"
done
