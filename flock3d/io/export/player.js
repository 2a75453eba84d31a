// flock3d's HTML player: plays the recorded flock packed into this page (see html.py for the
// packing). Runs after the three.js bundle, which sets the global FLOCK3D_THREE.
//
// URL hash: #t=SECONDS starts at that simulated time; &paused does not start playing; &probe=K
// writes the decoded state of the first K boids at that time into #flock3d-probe (for tests).
// The page reports its state in #flock3d-status (data-state "loading", "ready" or "error",
// errors as text, data-decode-ms, and three.js's warnings in data-warnings), so that a headless
// browser can read it from the DOM.
"use strict";
(() => {
  const status = document.getElementById("flock3d-status");
  const errors = [];
  const fail = (text) => {
    errors.push(String(text));
    status.dataset.state = "error";
    status.textContent = errors.join("\n");
  };
  window.addEventListener("error", (e) => fail(e.message || e));
  window.addEventListener("unhandledrejection", (e) => fail(e.reason));
  const consoleError = console.error.bind(console);
  console.error = (...args) => {
    fail(args.join(" "));
    consoleError(...args);
  };
  const warnings = [];
  const consoleWarn = console.warn.bind(console);
  console.warn = (...args) => {
    warnings.push(args.join(" "));
    status.dataset.warnings = warnings.join("\n");
    consoleWarn(...args);
  };

  const began = performance.now();
  const THREE = window.FLOCK3D_THREE;
  const meta = JSON.parse(document.getElementById("flock3d-meta").textContent);

  function bytesOf(text) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  const arrayOf = (Type, text) => {
    const b = bytesOf(text);
    return new Type(b.buffer, b.byteOffset, b.byteLength / Type.BYTES_PER_ELEMENT);
  };

  // -- the frames: every block's arrays copied into one array per stream -----------------------
  const T = meta.frames, P = meta.boids + meta.predators, K = meta.moving.length;
  const boxes = new Float32Array(T * 6); // per frame: lowest corner (3), step of one unit (3)
  const turns = new Uint32Array(T * P); // orientations, smallest three (see html.py)
  const placed = new Float32Array(T * K * 12); // moving objects: rotation (3x3, rows), origin
  const spots = new Uint16Array(T * P * 3); // positions, in units of the frame's step
  for (const block of document.querySelectorAll("script.flock3d-frames")) {
    const first = +block.dataset.first, n = +block.dataset.count;
    const b = bytesOf(block.textContent.trim());
    let at = 0;
    const take = (Type, target, per) => {
      const count = n * per;
      target.set(new Type(b.buffer, b.byteOffset + at, count), first * per);
      at += count * Type.BYTES_PER_ELEMENT;
    };
    take(Float32Array, boxes, 6);
    take(Uint32Array, turns, P);
    take(Float32Array, placed, K * 12);
    take(Uint16Array, spots, P * 3);
  }
  const times = Float64Array.from(meta.times);
  status.dataset.decodeMs = Math.round(performance.now() - began); // how long the frames took to unpack

  const quat = new Float32Array(4); // x, y, z, w
  const SCALE = Math.SQRT1_2 / 511.5;
  function turnOf(word) {
    const big = word >>> 30;
    let sum = 0, k = 0;
    for (let c = 0; c < 4; c++) {
      if (c === big) continue;
      const v = (((word >>> (20 - 10 * k)) & 1023) - 511.5) * SCALE;
      quat[c] = v;
      sum += v * v;
      k++;
    }
    quat[big] = Math.sqrt(Math.max(0, 1 - sum));
    return quat; // stored order w, x, y, z: quat[0] is w
  }
  function positionOf(frame, j, out) {
    const o = 6 * frame, s = 3 * (frame * P + j);
    for (let a = 0; a < 3; a++) out[a] = boxes[o + a] + spots[s + a] * boxes[o + 3 + a];
    return out;
  }

  // -- the scene ---------------------------------------------------------------------------------
  const canvas = document.getElementById("flock3d-canvas");
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  renderer.shadowMap.enabled = true;
  renderer.shadowMap.type = THREE.PCFShadowMap; // soft PCF is gone from three.js 0.187: PCF filters alike
  const scene = new THREE.Scene();
  const srgb = (c) => new THREE.Color().setRGB(c[0], c[1], c[2], THREE.SRGBColorSpace);

  // The sky by direction, not by screen row (the camera orbits): night blue from 35 degrees up,
  // the fog's colour at the horizon (the far ground melts into it), and below it the dusky
  // colour the viewer shows at the bottom of its picture, where a camera looking down sees it.
  const sky = document.createElement("canvas");
  sky.width = 4;
  sky.height = 256; // rows: elevation from +90 (top) to -90 degrees, equirectangular
  const g = sky.getContext("2d");
  const gradient = g.createLinearGradient(0, 0, 0, 256);
  const css = (c) => `rgb(${c.map((x) => Math.round(255 * x)).join(",")})`;
  gradient.addColorStop(0, css(meta.sky.top));
  gradient.addColorStop(0.3, css(meta.sky.top));
  gradient.addColorStop(0.5, css(meta.fog.color));
  gradient.addColorStop(0.75, css(meta.sky.bottom));
  gradient.addColorStop(1, css(meta.sky.bottom));
  g.fillStyle = gradient;
  g.fillRect(0, 0, 4, 256);
  scene.background = new THREE.CanvasTexture(sky);
  scene.background.mapping = THREE.EquirectangularReflectionMapping;
  scene.background.colorSpace = THREE.SRGBColorSpace;
  const fog = meta.fog;
  scene.fog = new THREE.Fog(srgb(fog.color), fog.near, fog.far);

  const cam = meta.camera;
  const camera = new THREE.PerspectiveCamera(cam.fov, 1, cam.near, cam.far);
  camera.up.fromArray(cam.up);
  camera.position.fromArray(cam.eye);
  const controls = new THREE.OrbitControls(camera, canvas);
  controls.target.fromArray(cam.target);
  controls.enableDamping = true;
  controls.update();

  const target = new THREE.Vector3().fromArray(cam.target);
  const sun = new THREE.DirectionalLight(0xfff1dc, 2.6);
  sun.position.fromArray(meta.sun).multiplyScalar(2 * meta.world.radius).add(target);
  sun.target.position.copy(target);
  sun.castShadow = true;
  const r = meta.world.radius * 1.05;
  Object.assign(sun.shadow.camera, { left: -r, right: r, top: r, bottom: -r, near: 0.01 * r, far: 4 * r });
  sun.shadow.mapSize.set(2048, 2048);
  sun.shadow.bias = -0.0005;
  sun.shadow.normalBias = 0.02 * meta.boidSize;
  scene.add(sun, sun.target);
  scene.add(new THREE.HemisphereLight(srgb(meta.sky.light), srgb(meta.sky.ground), 1.1));

  function geometryOf(m) {
    const geo = new THREE.BufferGeometry();
    geo.setAttribute("position", new THREE.BufferAttribute(arrayOf(Float32Array, m.vertices), 3));
    if (m.normals) {
      geo.setAttribute("normal", new THREE.BufferAttribute(arrayOf(Int8Array, m.normals), 3, true));
    }
    geo.setIndex(new THREE.BufferAttribute(arrayOf(m.wide ? Uint32Array : Uint16Array, m.faces), 1));
    if (!m.normals) geo.computeVertexNormals();
    return geo;
  }

  const moving = [];
  for (const o of meta.objects) {
    const material = new THREE.MeshLambertMaterial({
      color: o.colors ? 0xffffff : srgb(o.color),
      side: o.arena ? THREE.BackSide : THREE.FrontSide,
      vertexColors: Boolean(o.colors),
    });
    const geometry = geometryOf(o.mesh);
    if (o.colors) {
      // a ground's colours by height and slope, sRGB bytes: three shades in linear light
      const bytes = arrayOf(Uint8Array, o.colors), linear = new Float32Array(bytes.length);
      const c = new THREE.Color();
      for (let i = 0; i < bytes.length; i += 3) {
        c.setRGB(bytes[i] / 255, bytes[i + 1] / 255, bytes[i + 2] / 255, THREE.SRGBColorSpace);
        linear[i] = c.r; linear[i + 1] = c.g; linear[i + 2] = c.b;
      }
      geometry.setAttribute("color", new THREE.BufferAttribute(linear, 3));
    }
    const mesh = new THREE.Mesh(geometry, material);
    mesh.matrixAutoUpdate = false;
    mesh.receiveShadow = true;
    mesh.castShadow = !o.arena && !o.ground;
    setPlaced(mesh.matrix, o.frame, 0);
    if (o.moving !== null) moving.push([mesh, o.moving]);
    scene.add(mesh);
  }
  function setPlaced(matrix, f, at) {
    // f: rotation rows (9) then origin (3); three's Matrix4.set takes rows
    matrix.set(f[at], f[at + 1], f[at + 2], f[at + 9], f[at + 3], f[at + 4], f[at + 5], f[at + 10],
      f[at + 6], f[at + 7], f[at + 8], f[at + 11], 0, 0, 0, 1);
  }

  // The arena's outline, quiet, as in the viewer: a box's edges; a sphere's equator and its rim
  // as seen from the camera (a circle turned to face it each frame).
  let rim = null;
  if (meta.arena) {
    const ar = meta.arena, c = ar.centre;
    const lines = new THREE.LineBasicMaterial({ color: srgb(ar.color), transparent: true, opacity: ar.color[3] });
    const circle = (n = 128) => {
      const p = [];
      for (let k = 0; k < n; k++) {
        for (const j of [k, k + 1]) p.push(Math.cos((2 * Math.PI * j) / n), Math.sin((2 * Math.PI * j) / n), 0);
      }
      return new THREE.BufferGeometry().setAttribute("position", new THREE.BufferAttribute(new Float32Array(p), 3));
    };
    if (ar.shape === "box") {
      const h = ar.half, p = [];
      const corners = ar.planar ? [[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]] : [];
      if (!ar.planar) for (const x of [-1, 1]) for (const y of [-1, 1]) for (const z of [-1, 1]) corners.push([x, y, z]);
      for (let i = 0; i < corners.length; i++) {
        for (let j = i + 1; j < corners.length; j++) {
          const differ = corners[i].filter((v, a) => v !== corners[j][a]).length;
          if (differ === 1) for (const k of [i, j]) p.push(...corners[k].map((v, a) => c[a] + v * h[a]));
        }
      }
      const geo = new THREE.BufferGeometry().setAttribute("position", new THREE.BufferAttribute(new Float32Array(p), 3));
      scene.add(new THREE.LineSegments(geo, lines));
    } else {
      const equator = new THREE.LineSegments(circle(), lines);
      equator.position.fromArray(c);
      equator.scale.setScalar(ar.radius);
      if (!ar.planar) equator.rotation.x = Math.PI / 2;
      scene.add(equator);
      if (!ar.planar) {
        rim = new THREE.LineSegments(circle(), lines);
        scene.add(rim);
      }
    }
  }
  const toEye = new THREE.Vector3();
  const rimCentre = new THREE.Vector3().fromArray(meta.arena ? meta.arena.centre : [0, 0, 0]);
  function placeRim() {
    // The sphere's outline from the eye at distance d: the circle of radius r sqrt(1 - (r/d)^2)
    // about the point r^2/d from the centre towards the eye; none from inside.
    if (!rim) return;
    const ar = meta.arena;
    toEye.copy(camera.position).sub(rimCentre);
    const d = toEye.length(), r = ar.radius;
    rim.visible = d > r * 1.001;
    if (!rim.visible) return;
    rim.position.fromArray(ar.centre).addScaledVector(toEye, (r * r) / (d * d));
    rim.scale.setScalar(r * Math.sqrt(1 - (r / d) ** 2));
    rim.lookAt(camera.position);
  }

  // One instanced mesh per boid shape; each instance knows its row among the packed boids.
  const minPixels = { value: meta.minPixels };
  const halfHeight = { value: 300 };
  const beatTime = { value: 0 };
  const groups = meta.groups.map((grp) => {
    // Flat shaded and lit on both sides, as in the viewer (thin wings are single faces).
    const material = new THREE.MeshLambertMaterial({ side: THREE.DoubleSide, flatShading: true });
    const flap = { value: grp.beat };
    // Keep every boid at least minPixels long on screen, as the viewer does: a far boid is
    // scaled up about its centre (drawn only; shadows keep the true size).
    material.onBeforeCompile = (shader) => {
      shader.uniforms.minPixels = minPixels;
      shader.uniforms.halfHeight = halfHeight;
      shader.uniforms.flap = flap;
      shader.uniforms.beatTime = beatTime;
      // A bird beats its wings (the tips move along its up axis), each at a phase of its own.
      shader.vertexShader = "uniform float minPixels, halfHeight, flap, beatTime;\nattribute float wing;\n" +
        shader.vertexShader.replace(
          "#include <begin_vertex>",
          `#include <begin_vertex>
          float phase = 6.2831853 * fract(float(gl_InstanceID) * 0.6180339887);
          transformed.y += flap * wing * sin(6.2831853 * beatTime + phase);`,
        ).replace(
          "#include <project_vertex>",
          `vec4 centre = modelViewMatrix * instanceMatrix * vec4(0.0, 0.0, 0.0, 1.0);
          float size = length(instanceMatrix[0].xyz);
          float pixels = size * projectionMatrix[1][1] * halfHeight / max(-centre.z, 1e-6);
          float grow = max(1.0, minPixels / max(pixels, 1e-6));
          vec4 mvPosition = modelViewMatrix * instanceMatrix * vec4(transformed * grow, 1.0);
          gl_Position = projectionMatrix * mvPosition;`,
        );
    };
    const geometry = geometryOf(grp.mesh);
    geometry.setAttribute("wing", new THREE.BufferAttribute(arrayOf(Float32Array, grp.flap), 1));
    const mesh = new THREE.InstancedMesh(geometry, material, grp.rows.length);
    mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    mesh.castShadow = true;
    mesh.frustumCulled = false;
    const colour = new THREE.Color();
    grp.rows.forEach((row, i) => {
      const c = meta.palette[meta.colours[row]];
      mesh.setColorAt(i, colour.setRGB(c[0], c[1], c[2], THREE.SRGBColorSpace));
    });
    scene.add(mesh);
    return { mesh, rows: Int32Array.from(grp.rows), size: grp.size };
  });

  // -- one moment: frame i, or between frames i and i + 1 --------------------------------------
  const a = new Float32Array(3), b = new Float32Array(3), qa = new Float32Array(4);
  function show(t) {
    let i = 0, lo = 0, hi = T - 1;
    while (lo <= hi) { // the last frame at or before t
      const mid = (lo + hi) >> 1;
      if (times[mid] <= t) { i = mid; lo = mid + 1; } else hi = mid - 1;
    }
    const j = Math.min(i + 1, T - 1);
    const w = j > i && times[j] > times[i] ? Math.min(Math.max((t - times[i]) / (times[j] - times[i]), 0), 1) : 0;
    for (const grp of groups) {
      const m = grp.mesh.instanceMatrix.array;
      for (let n = 0; n < grp.rows.length; n++) {
        const row = grp.rows[n];
        positionOf(i, row, a);
        qa.set(turnOf(turns[i * P + row]));
        if (w > 0) {
          positionOf(j, row, b);
          const jump = (b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2;
          if (jump < meta.maxJump * meta.maxJump) { // not across a periodic wrap
            for (let c = 0; c < 3; c++) a[c] += w * (b[c] - a[c]);
            const qb = turnOf(turns[j * P + row]);
            const sign = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3] < 0 ? -1 : 1;
            let norm = 0;
            for (let c = 0; c < 4; c++) {
              qa[c] += w * (sign * qb[c] - qa[c]);
              norm += qa[c] * qa[c];
            }
            norm = 1 / Math.sqrt(norm);
            for (let c = 0; c < 4; c++) qa[c] *= norm;
          }
        }
        compose(m, 16 * n, a, qa, grp.size);
      }
      grp.mesh.instanceMatrix.needsUpdate = true;
    }
    for (const [mesh, k] of moving) setPlaced(mesh.matrix, placed, 12 * (i * K + k));
    return i;
  }
  function compose(m, o, p, q, s) {
    // q: w, x, y, z (flock3d's order); column-major, as three's Matrix4.compose
    const w = q[0], x = q[1], y = q[2], z = q[3];
    const x2 = x + x, y2 = y + y, z2 = z + z;
    const xx = x * x2, xy = x * y2, xz = x * z2, yy = y * y2, yz = y * z2, zz = z * z2;
    const wx = w * x2, wy = w * y2, wz = w * z2;
    m[o] = (1 - (yy + zz)) * s; m[o + 1] = (xy + wz) * s; m[o + 2] = (xz - wy) * s; m[o + 3] = 0;
    m[o + 4] = (xy - wz) * s; m[o + 5] = (1 - (xx + zz)) * s; m[o + 6] = (yz + wx) * s; m[o + 7] = 0;
    m[o + 8] = (xz + wy) * s; m[o + 9] = (yz - wx) * s; m[o + 10] = (1 - (xx + yy)) * s; m[o + 11] = 0;
    m[o + 12] = p[0]; m[o + 13] = p[1]; m[o + 14] = p[2]; m[o + 15] = 1;
  }

  // -- controls: play/pause, the time slider, the time shown ------------------------------------
  const start = times[0], end = times[T - 1];
  const slider = document.getElementById("flock3d-time");
  const clock = document.getElementById("flock3d-clock");
  const button = document.getElementById("flock3d-play");
  slider.min = start;
  slider.max = end;
  slider.step = "any";
  const hash = new URLSearchParams(location.hash.slice(1));
  let t = hash.has("t") ? Math.min(Math.max(+hash.get("t") || 0, start), end) : start;
  let playing = !hash.has("paused") && T > 1;
  let last = null;
  const setPlaying = (on) => {
    playing = on;
    button.textContent = on ? "\u275A\u275A" : "\u25B6";
    button.title = on ? "Pause (space)" : "Play (space)";
    last = null;
  };
  setPlaying(playing);
  button.addEventListener("click", () => {
    if (!playing && t >= end) t = start;
    setPlaying(!playing);
  });
  window.addEventListener("keydown", (e) => {
    if (e.code === "Space" && e.target === document.body) {
      e.preventDefault();
      button.click();
    }
  });
  slider.addEventListener("input", () => {
    t = +slider.value;
    setPlaying(false);
  });

  function resize() {
    const w = canvas.clientWidth, h = canvas.clientHeight;
    if (canvas.width !== Math.floor(w * renderer.getPixelRatio()) || camera.aspect !== w / h) {
      renderer.setSize(w, h, false);
      camera.aspect = w / h;
      camera.updateProjectionMatrix();
    }
    halfHeight.value = 0.5 * h * renderer.getPixelRatio();
  }
  const digits = end - start < 100 ? 2 : 1;
  function draw() {
    resize();
    const i = show(t);
    beatTime.value = (meta.beatsPerSecond * t) % 3600;
    slider.value = t;
    clock.textContent = `t = ${t.toFixed(digits)} s / ${end.toFixed(digits)} s  (frame ${i + 1} of ${T})`;
    controls.update();
    placeRim();
    renderer.render(scene, camera);
  }
  function tick(now) {
    if (playing) {
      if (last !== null) t += (now - last) / 1000;
      last = now;
      if (t >= end) {
        t = end;
        setPlaying(false);
      }
    }
    draw();
    requestAnimationFrame(tick);
  }

  draw(); // the first picture before the load event, so that a headless browser sees it
  if (hash.has("probe")) {
    const n = Math.min(+hash.get("probe") || 0, P);
    const i = show(t), rows = [];
    for (let k = 0; k < n; k++) {
      const q = turnOf(turns[i * P + k]);
      rows.push([...positionOf(i, k, new Float32Array(3)), ...q]);
    }
    document.getElementById("flock3d-probe").textContent = JSON.stringify({ frame: i, rows });
  }
  if (status.dataset.state !== "error") status.dataset.state = "ready";
  requestAnimationFrame(tick);
})();
