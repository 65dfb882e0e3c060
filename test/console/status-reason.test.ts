// Unit test of how the console words the controller's status reason (the muted line under the
// status badge in the deployments list and the deployment's header): the words as they come,
// the first one capitalised when it is a plain word, nothing when there is no reason. It
// sits here because the test runner looks in src/ and test/ only.

import { describe, expect, it } from 'vitest';
import { statusReasonText } from '../../console/src/components/status-reason.js';

describe('console status reason', () => {
  it('capitalises a leading plain word and keeps the rest as the controller wrote it', () => {
    expect(statusReasonText('pulling 127.0.0.1:5000/team/engine:v1: 45%')).toBe('Pulling 127.0.0.1:5000/team/engine:v1: 45%');
    expect(statusReasonText('tag v9 of 127.0.0.1:5000/team/engine not found in 127.0.0.1:5000; retrying in 5 s')).toBe(
      'Tag v9 of 127.0.0.1:5000/team/engine not found in 127.0.0.1:5000; retrying in 5 s',
    );
    expect(statusReasonText('container exited with code 1; restarting in 2 s (restart 3)')).toBe('Container exited with code 1; restarting in 2 s (restart 3)');
  });

  it('leaves an image or an address at the start alone', () => {
    expect(statusReasonText('infergate/engine:0.1.0 is being prepared')).toBe('infergate/engine:0.1.0 is being prepared');
    expect(statusReasonText('127.0.0.1:5000 refused the credentials')).toBe('127.0.0.1:5000 refused the credentials');
  });

  it('says nothing when there is no reason', () => {
    expect(statusReasonText(null)).toBeNull();
    expect(statusReasonText(undefined)).toBeNull();
    expect(statusReasonText('   ')).toBeNull();
  });
});
