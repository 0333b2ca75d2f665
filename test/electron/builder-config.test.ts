/**
 * The packaging configuration, loaded and schema-checked by electron-builder's
 * own code (app-builder-lib, the exact version electron-builder pins), since
 * packaging itself cannot run here (no Electron binary download).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

interface BuilderConfig {
  appId?: string;
  productName?: string;
  /** After loading, a list of FileSets (`{ filter: [...] }`) or plain patterns. */
  files?: Array<string | { from?: string; filter?: string[] }>;
  extraMetadata?: { main?: string };
  directories?: { buildResources?: string; output?: string };
  linux?: { target?: string[]; icon?: string };
  mac?: { target?: string[]; icon?: string };
  win?: { target?: string[]; icon?: string };
  electronFuses?: Record<string, boolean> | null;
}
interface ConfigModule {
  getConfig(projectDir: string, configPath: string | null, fromOptions: null): Promise<BuilderConfig>;
  validateConfiguration(config: BuilderConfig, debugLogger: { isEnabled: boolean }): Promise<void>;
}

function builderRequire(module: string): unknown {
  const require = createRequire(import.meta.url);
  const builderDir = path.dirname(require.resolve('electron-builder/package.json'));
  return require(require.resolve(module, { paths: [builderDir] }));
}

function loadConfigModule(): ConfigModule {
  return builderRequire('app-builder-lib/out/util/config/config.js') as ConfigModule;
}

/** The fuse wire electron-builder writes into the packaged binary, from its own code. */
async function fuseWire(fuses: Record<string, boolean>): Promise<Record<string, unknown>> {
  const { PlatformPackager } = builderRequire('app-builder-lib') as {
    PlatformPackager: { prototype: { generateFuseConfig(f: unknown): Promise<Record<string, unknown>> } };
  };
  return PlatformPackager.prototype.generateFuseConfig.call({}, fuses);
}

let config: BuilderConfig;
beforeAll(async () => {
  const mod = loadConfigModule();
  config = await mod.getConfig(ROOT, path.join(ROOT, 'electron-builder.yml'), null);
  await mod.validateConfiguration(config, { isEnabled: false });
});

describe('electron-builder configuration', () => {
  it('names the app', () => {
    expect(config.appId).toBe('dev.worklease.console');
    expect(config.productName).toBe('worklease console');
  });

  it('builds AppImage + deb, dmg and nsis', () => {
    expect(config.linux?.target).toEqual(['AppImage', 'deb']);
    expect(config.mac?.target).toEqual(['dmg']);
    expect(config.win?.target).toEqual(['nsis']);
  });

  it('points at icons that exist and are real images', () => {
    const linuxDir = path.join(ROOT, config.linux?.icon ?? '');
    for (const size of [16, 32, 48, 64, 128, 256, 512]) {
      const file = path.join(linuxDir, `${size}x${size}.png`);
      const png = readFileSync(file);
      expect(png.subarray(1, 4).toString('latin1'), file).toBe('PNG');
      expect(png.readUInt32BE(16), `${file} width`).toBe(size);
      expect(png.readUInt32BE(20), `${file} height`).toBe(size);
    }
    const icns = readFileSync(path.join(ROOT, config.mac?.icon ?? ''));
    expect(icns.subarray(0, 4).toString('latin1')).toBe('icns');
    expect(icns.readUInt32BE(4)).toBe(icns.length);
    const icnsTypes: string[] = [];
    for (let at = 8; at < icns.length; at += icns.readUInt32BE(at + 4)) {
      icnsTypes.push(icns.subarray(at, at + 4).toString('latin1'));
      expect(icns.subarray(at + 9, at + 12).toString('latin1'), 'icns entries are PNG').toBe('PNG');
    }
    expect(icnsTypes).toEqual(expect.arrayContaining(['ic07', 'ic08', 'ic09', 'ic10']));
    const ico = readFileSync(path.join(ROOT, config.win?.icon ?? ''));
    expect(ico.readUInt16LE(0)).toBe(0);
    expect(ico.readUInt16LE(2)).toBe(1);
    expect(ico.readUInt16LE(4)).toBeGreaterThanOrEqual(5);
    expect(
      statSync(path.join(ROOT, config.directories?.buildResources ?? '', 'icon.png')).size,
    ).toBeGreaterThan(0);
  });

  it('sets the Electron fuses: no Node mode, no NODE_OPTIONS, no inspector, app code only from a checked asar', async () => {
    // Without them any process of the same user could run the signed app as Node
    // (ELECTRON_RUN_AS_NODE), inject code (NODE_OPTIONS=--require) or attach a debugger
    // (--inspect, SIGUSR1), and act with the app's keychain identity.
    expect(config.electronFuses).toEqual({
      runAsNode: false,
      enableNodeOptionsEnvironmentVariable: false,
      enableNodeCliInspectArguments: false,
      enableEmbeddedAsarIntegrityValidation: true,
      onlyLoadAppFromAsar: true,
      enableCookieEncryption: true,
      grantFileProtocolExtraPrivileges: false,
    });
    const { FuseV1Options, FuseVersion } = (await import('@electron/fuses' as string)) as {
      FuseV1Options: Record<string, number>;
      FuseVersion: Record<string, string>;
    };
    const wire = await fuseWire(config.electronFuses ?? {});
    expect(wire.version).toBe(FuseVersion.V1);
    expect(wire[FuseV1Options.RunAsNode!]).toBe(false);
    expect(wire[FuseV1Options.EnableNodeOptionsEnvironmentVariable!]).toBe(false);
    expect(wire[FuseV1Options.EnableNodeCliInspectArguments!]).toBe(false);
    expect(wire[FuseV1Options.EnableEmbeddedAsarIntegrityValidation!]).toBe(true);
    expect(wire[FuseV1Options.OnlyLoadAppFromAsar!]).toBe(true);
    expect(wire[FuseV1Options.GrantFileProtocolExtraPrivileges!]).toBe(false);
    // The schema check above is real: a misspelt fuse is refused, not ignored.
    await expect(
      loadConfigModule().validateConfiguration(
        { ...config, electronFuses: { runAsNod: false } },
        { isEnabled: false },
      ),
    ).rejects.toThrow(/configuration\.electronFuses should be/);
  });

  it('packages only built output, starting from the bundled main', () => {
    const sets = config.files ?? [];
    for (const set of sets) if (typeof set !== 'string') expect(set.from ?? '.').toBe('.');
    const patterns = sets.flatMap((set) => (typeof set === 'string' ? [set] : (set.filter ?? [])));
    const included = patterns.filter((p) => !p.startsWith('!'));
    expect(included.sort()).toEqual(['dist/electron/**', 'dist/renderer/**', 'package.json']);
    expect(patterns).toContain('!node_modules/**');
    expect(config.extraMetadata?.main).toBe('dist/electron/main.cjs');
    expect(existsSync(path.join(ROOT, 'electron', 'main.ts'))).toBe(true);
  });
});
